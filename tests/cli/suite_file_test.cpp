// suite_file_test.cpp — `kvcheck run SUITE.json`: each entry's scenarios run with the entry's
// expectation, regressions, seeds, --fail-fast and labels, results under a folder per entry;
// the A/B flags need --force-expect there; an entry that needs a GPU is not run on the host, and
// says so; a bad suite is exit 2 naming the field, before anything runs.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli/device_factory.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

class SuiteFile : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::create_directories(dir_ / "s");
    std::string poison = kPoisonScenario;
    poison.insert(poison.rfind('}'),
                  R"(, "regressions": ["new-blocks-not-zeroed"], "expect": "corrupt")");
    write("s/poison.json", poison);
    write("s/tiny.json", kTinyScenario);
    write("suite.json", R"({
  "suite": 1,
  "entries": [
    {"id": "as-written", "paths": ["s/"], "labels": ["ci"]},
    {"id": "clean", "paths": ["s/poison.json"], "regressions": "off", "expect": "clean",
     "seeds": "1-2", "labels": ["ci"]},
    {"id": "caught", "paths": ["s/*.json"], "fail_fast": true, "seeds": "3-4"},
    {"id": "big", "paths": ["s/tiny.json"], "requires": ["gpu"]}
  ]
})");
  }
  std::vector<std::string> sorted_files(const std::string& sub) const {
    std::vector<std::string> f = files_under(sub);
    std::sort(f.begin(), f.end());
    return f;
  }
};

TEST_F(SuiteFile, EachEntryRunsItsScenariosItsWayWithResultsUnderItsId) {
  CliRun r = kvcheck("run suite.json --out out -q --device host");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(sorted_files("out"),
            (std::vector<std::string>{"as-written/s/poison.json", "as-written/s/tiny.json",
                                      "caught/s/poison.seed3.json", "caught/s/poison.seed4.json",
                                      "caught/s/tiny.seed3.json", "caught/s/tiny.seed4.json",
                                      "clean/s/poison.seed1.json", "clean/s/poison.seed2.json"}));
  const json clean = json::parse(read_file(dir_ / "out/clean/s/poison.seed2.json"));
  EXPECT_EQ(clean["scenario"], "clean::poison.seed2");
  EXPECT_EQ(clean["seed"], 2);
  EXPECT_EQ(clean["regressions"], json::array());
  EXPECT_EQ(clean["verdict"], "clean");
  const json caught = json::parse(read_file(dir_ / "out/caught/s/poison.seed3.json"));
  EXPECT_EQ(caught["verdict"], "corrupt");
  EXPECT_EQ(caught["expected"], "corrupt");
  EXPECT_TRUE(contains(r.err, "suite entry big needs a GPU and the run is on the host: its 1 "
                              "scenario(s) not run"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "8 passed, 0 failed")) << r.out;
  // --device auto asks for a GPU (in a worker process); --device cuda runs the entry or says why
  // not (exit 3 without a GPU).
  CliRun gpu = kvcheck("run suite.json --label big --device cuda --out out2 -q");
  EXPECT_EQ(gpu.exit_code, cli::cuda_device_available() ? 0 : 3) << gpu.err;
  CliRun autodev = kvcheck("run suite.json --label caught --label big --device auto --out out3 -q");
  EXPECT_EQ(autodev.exit_code, 0) << autodev.err;
  if (!cli::cuda_device_available()) {
    EXPECT_TRUE(contains(autodev.err, "suite entry big needs a GPU")) << autodev.err;
  }
}

TEST_F(SuiteFile, LabelsAndRunIdsSelectEntriesAndFiles) {
  CliRun r = kvcheck("run suite.json --label caught -k caught::s/tiny.json --out out -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sorted_files("out"), (std::vector<std::string>{"caught/s/tiny.seed3.json",
                                                           "caught/s/tiny.seed4.json"}));
  // The entry's labels and id are the runs' labels; --seeds replaces the entry's seeds.
  r = kvcheck("run suite.json --label ci --exclude-label as-written --seeds 7 --out out2 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sorted_files("out2"), std::vector<std::string>{"clean/s/poison.seed7.json"});
  // A folder holding a suite lists (and runs) its scenarios, not the suite.
  fs::copy_file(dir_ / "suite.json", dir_ / "s/ci.suite.json");
  r = kvcheck("list scenarios s --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 2u) << r.out;
}

TEST_F(SuiteFile, TheABFlagsNeedForceExpectInASuite) {
  for (const std::string flag : {"--expect clean", "--no-regressions",
                                 "--regression new-blocks-not-zeroed"}) {
    CliRun r = kvcheck("run suite.json --out out " + flag);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "would replace what the suite's entries expect")) << r.err;
    EXPECT_TRUE(contains(r.err, "--force-expect")) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out")) << flag;
  }
  // Forced: every run expects clean, so the caught entry's regression runs miss (exit 1).
  CliRun forced = kvcheck("run suite.json --label caught -k poison --expect clean --force-expect "
                          "--out out -q");
  EXPECT_EQ(forced.exit_code, 1) << forced.err;
  // Outside a suite the flags need nothing.
  EXPECT_EQ(kvcheck("run s/poison.json --expect corrupt --out out2 -q").exit_code, 0);
}

TEST_F(SuiteFile, ABadSuiteIsExit2NamingTheFieldBeforeAnythingRuns) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["nowhere.json"]}]})",
       "bad.suite.json: /entries/0/paths/0: got \"nowhere.json\": no such file or folder"},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/*.yaml"]}]})",
       "/entries/0/paths/0: got \"s/*.yaml\", a glob that matches no scenario file"},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/"], "expcet": "clean"}]})",
       "/entries/0/expcet: unknown key \"expcet\"; did you mean \"expect\"?"},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/"]}, {"id": "a", "paths": ["s/"]}]})",
       "/entries/1/id: id \"a\" is used by an earlier entry"},
      {R"({"suite": 1, "entries": [{"id": "Nightly", "paths": ["s/"]}]})",
       "/entries/0/id: got \"Nightly\", expected a label"},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/"], "seeds": "5-1"}]})",
       "/entries/0/seeds: "},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/"], "requires": ["tpu"]}]})",
       "/entries/0/requires/0: got \"tpu\", expected \"gpu\""},
      {R"({"suite": 2, "entries": []})", "bad.suite.json: /suite: "},
      {R"({"entries": [{"id": "a", "paths": ["s/"]}]})", "/suite: missing"},
      {R"({"suite": 1, "entries": [{"id": "a"}]})", "/entries/0/paths: missing"},
      {R"({"suite": 1, "entries": [{"id": "a", "paths": ["s/"], "expect": "dirty"}]})",
       "/entries/0/expect: got \"dirty\""},
      {R"({"suite": 1, "entries": [)", "bad.suite.json: line 1"},
  };
  for (const auto& [text, message] : cases) {
    write("bad.suite.json", text);
    for (const char* cmd : {"run bad.suite.json --out out", "validate bad.suite.json"}) {
      CliRun r = kvcheck(cmd);
      EXPECT_EQ(r.exit_code, 2) << text << "\n" << r.err;
      EXPECT_TRUE(contains(r.err, message)) << text << "\nexpected: " << message << "\n" << r.err;
    }
    EXPECT_FALSE(fs::exists(dir_ / "out")) << text;
  }
  // A scenario an entry names is read like any other: its error names the file.
  write("s/broken.json", R"({"format": 1, "cache": {"block_size": 0}})");
  CliRun r = kvcheck("run suite.json --out out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "s/broken.json: /cache/block_size")) << r.err;
}

}  // namespace
}  // namespace kv::test
