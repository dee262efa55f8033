// suite_run_test.cpp — `kvcheck run` over many scenarios as a CI gate runs it: folders expand to
// their scenarios, --seeds runs each once per seed with a result each, -x/--exitfirst ends the
// run at the first miss, and a closing summary counts the outcomes and names each one that did
// not pass.
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

class SuiteRun : public CliTest {
 protected:
  // suite/a.json (tiny), suite/sub/b.json (poison), suite/sub/c.schema.json (not a scenario).
  void write_suite() {
    fs::create_directories(dir_ / "suite/sub");
    write("suite/a.json", kTinyScenario);
    write("suite/sub/b.json", kPoisonScenario);
    write("suite/sub/c.schema.json", R"({"$schema": "https://json-schema.org/draft/2020-12"})");
    write("suite/.hidden.json", "not json");
  }
};

TEST_F(SuiteRun, AFolderRunsEveryScenarioUnderItSortedAndSkipsSchemas) {
  write_suite();
  CliRun r = kvcheck("run suite --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json docs = run_results(r);
  ASSERT_EQ(docs.size(), 2u) << r.out;
  EXPECT_EQ(docs[0]["scenario"], "tiny");  // suite/a.json before suite/sub/b.json
  EXPECT_EQ(docs[1]["scenario"], "poison");
  EXPECT_EQ(files_under("out").size(), 2u);
  CliRun v = kvcheck("validate suite");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(contains(v.out, "ok suite/a.json\n")) << v.out;
  EXPECT_TRUE(contains(v.out, "ok suite/sub/b.json\n")) << v.out;
  EXPECT_FALSE(contains(v.out, "schema")) << v.out;
}

TEST_F(SuiteRun, AStrayFileInAFolderIsRefusedByNameAndNothingRuns) {
  write_suite();
  write("suite/sub/notes.txt", "these are notes");
  CliRun r = kvcheck("run suite --out out");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "suite/sub/notes.txt")) << r.err;
  EXPECT_TRUE(files_under("out").empty());
}

TEST_F(SuiteRun, AnEmptyFolderIsRefusedByName) {
  fs::create_directories(dir_ / "empty");
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json empty --out out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "empty: the folder holds no scenario file")) << r.err;
  EXPECT_TRUE(files_under("out").empty());
}

TEST_F(SuiteRun, SeedsRunEachScenarioOncePerSeedWithAResultEach) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --seeds 1-3,7 -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int seed : {1, 2, 3, 7}) {
    const fs::path f = dir_ / ("out/tiny.seed" + std::to_string(seed) + ".json");
    ASSERT_TRUE(fs::exists(f)) << f;
    EXPECT_EQ(json::parse(read_file(f))["seed"], seed);
  }
  EXPECT_EQ(files_under("out").size(), 4u);
  EXPECT_TRUE(contains(r.out, "4 passed, 0 failed, 0 could not run, 0 errors in ")) << r.out;
}

TEST_F(SuiteRun, BadSeedListsAreRefusedNamingTheOption) {
  write("tiny.json", kTinyScenario);
  for (const std::string& bad : {"5-1", "1,2,1", "x", "1-", "-3", "1-100000"}) {
    CliRun r = kvcheck("run tiny.json --seeds " + bad + " --out out");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_TRUE(contains(r.err, "--seeds")) << bad << ": " << r.err;
  }
  CliRun both = kvcheck("run tiny.json --seeds 1-2 --seed 3 --out out");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_TRUE(files_under("out").empty());
}

TEST_F(SuiteRun, ExitFirstEndsTheRunAtTheFirstMissAndCountsTheRestNotRun) {
  write("tiny.json", kTinyScenario);
  write("poison.json", kPoisonScenario);
  // poison with the regression on but expected clean misses; tiny after it is not run.
  CliRun x = kvcheck("run poison.json tiny.json --regression new-blocks-not-zeroed "
                     "--expect clean -x --out out");
  EXPECT_EQ(x.exit_code, 1) << x.err;
  EXPECT_TRUE(fs::exists(dir_ / "out/poison.json"));
  EXPECT_FALSE(fs::exists(dir_ / "out/tiny.json"));
  EXPECT_TRUE(contains(x.out, "0 passed, 1 failed, 0 could not run, 0 errors, 1 not run in "))
      << x.out;
  EXPECT_TRUE(contains(x.err, "--exitfirst")) << x.err;
  EXPECT_TRUE(contains(x.err, "hint: a regression is on: if the corruption is the point, pass "
                              "--expect corrupt")) << x.err;
  // Without it the run goes on: both are judged (tiny has no poisoned blocks to reach).
  fs::remove_all(dir_ / "out");
  CliRun all = kvcheck("run poison.json tiny.json --regression new-blocks-not-zeroed "
                       "--expect clean --out out");
  EXPECT_EQ(all.exit_code, 1);
  EXPECT_TRUE(fs::exists(dir_ / "out/tiny.json"));
  EXPECT_TRUE(contains(all.out, "1 passed, 1 failed, 0 could not run, 0 errors in ")) << all.out;
}

TEST_F(SuiteRun, TheSummaryNamesEachFailureWithItsFileSeedAndFirstFailure) {
  write("poison.json", kPoisonScenario);
  CliRun r = kvcheck("run poison.json --regression new-blocks-not-zeroed --expect clean "
                     "--seeds 3 --out out");
  EXPECT_EQ(r.exit_code, 1);
  const std::string want = "FAILED poison.seed3 (poison.json, seed 3): verdict corrupt, "
                           "expected clean; first failure: epoch 2";
  EXPECT_TRUE(contains(r.out, want)) << r.out;
  // The summary ends stdout, then where the results went.
  const size_t at = r.out.rfind("0 passed, 1 failed");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string tail = "\nresults: 1 file in out\n";
  EXPECT_EQ(r.out.find('\n', r.out.find(want)), r.out.size() - tail.size()) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - tail.size()), tail) << r.out;
}

TEST_F(SuiteRun, NoOutWritesNoResultFile) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --seeds 1-2 --no-out --junit r.xml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "results"));
  EXPECT_TRUE(fs::exists(dir_ / "r.xml"));
  EXPECT_TRUE(contains(r.out, "2 passed, 0 failed")) << r.out;
  EXPECT_FALSE(contains(r.out, "results: ")) << r.out;
  EXPECT_EQ(kvcheck("run tiny.json --no-out --out o").exit_code, 2);
}

TEST_F(SuiteRun, UnderJsonStdoutStaysOneDocumentAndTheSummaryGoesToStderr) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --seeds 1-2 --json --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_results(r).size(), 2u);
  EXPECT_TRUE(contains(r.err, "2 passed, 0 failed, 0 could not run, 0 errors in ")) << r.err;
}

TEST_F(SuiteRun, AJunitReportWhereNoneCanBeWrittenIsRefusedBeforeAnythingRuns) {
  write("tiny.json", kTinyScenario);
  CliRun missing = kvcheck("run tiny.json --junit nodir/r.xml --out out");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "--junit nodir/r.xml: its folder ")) << missing.err;
  CliRun folder = kvcheck("run tiny.json --junit . --out out");
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_TRUE(contains(folder.err, "--junit .: is a folder")) << folder.err;
  EXPECT_TRUE(files_under("out").empty());
  // Written, with the run's one testcase, where it can be.
  CliRun ok = kvcheck("run tiny.json --seeds 2 --junit r.xml --out out -q");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const std::string xml = read_file(dir_ / "r.xml");
  EXPECT_TRUE(contains(xml, "<testcase name=\"tiny.seed2\" classname=\"kvcheck\"")) << xml;
}

TEST_F(SuiteRun, SetChangesAFieldOfEveryFileAndTheResultRecordsIt) {
  write("tiny.json", kTinyScenario);
  write("poison.json", kPoisonScenario);
  CliRun r = kvcheck("run tiny.json poison.json --set cache.block_size=3 "
                     "--set /workload/epochs=1 --json -q --no-out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json docs = run_results(r);
  ASSERT_EQ(docs.size(), 2u);
  for (const auto& d : docs) {
    EXPECT_EQ(d["epochs"].size(), 1u) << d["scenario"];
    ASSERT_EQ(d["settings"].size(), 2u);
    EXPECT_EQ(d["settings"][0]["pointer"], "/cache/block_size");
    EXPECT_EQ(d["settings"][0]["value"], 3);
  }
  // Judged as the file would be: a bad value is exit 2 naming the field and the setting.
  CliRun bad = kvcheck("run tiny.json --set cache.block_size=0 --out out");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "tiny.json: /cache/block_size: got 0")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "(given by --set cache.block_size=0)")) << bad.err;
  EXPECT_TRUE(files_under("out").empty());
  CliRun form = kvcheck("run tiny.json --set cache.block_size --out out");
  EXPECT_EQ(form.exit_code, 2);
  EXPECT_TRUE(contains(form.err, "--set: \"cache.block_size\" is not KEY=VALUE")) << form.err;
}

}  // namespace
}  // namespace kv::test
