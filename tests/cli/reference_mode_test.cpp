// reference_mode_test.cpp — `kvcheck run --reference full|sampled --sampled-requests N` end to
// end: a sampled run still catches the regressions (NaN included where the reference never
// looked), stays clean without them, says what it checked in the JSON and the table, and bad
// values exit 2 before anything runs.
#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "reference/reference_sample.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;
using ReferenceMode = CliTest;

const std::string kScenarios = KVCHECK_SOURCE_DIR "/scenarios/";

// The tiny scenario with a "checks" object of its own.
std::string tiny_with_checks(const std::string& checks) {
  std::string text = kTinyScenario;
  text.insert(text.rfind('}'), ", \"checks\": " + checks);
  return text;
}

void expect_sampled(const json& doc, int32_t n) {
  EXPECT_EQ(doc["reference_mode"], "sampled");
  EXPECT_EQ(doc["reference_sampled_requests"], n);
  for (const json& e : doc["epochs"])
    EXPECT_EQ(e["checked_requests"], std::min(n, e["requests"].get<int32_t>()));
}

TEST_F(ReferenceMode, SampledRunsStillCatchTheSeed000Regressions) {
  for (const char* file : {"regressions/new-blocks-not-zeroed.json",
                           "seeds/000-mla-linear-hybrid-not-zeroed.json"}) {
    const std::string path = kScenarios + file;
    CliRun on = kvcheck("run '" + path + "' --reference sampled --sampled-requests 4 --json -q "
                        "--out out");
    ASSERT_EQ(on.exit_code, 0) << file << ": the corruption it expects\n" << on.err;
    json doc = only_result(on);
    EXPECT_EQ(doc["verdict"], "corrupt") << file;
    expect_sampled(doc, 4);
    EXPECT_EQ(doc["epochs"][0]["requests"], 24);

    CliRun off = kvcheck("run '" + path + "' --sampled-requests 4 --no-regressions "
                         "--expect clean --json -q --out out");
    ASSERT_EQ(off.exit_code, 0) << file << ": clean without the regression\n" << off.err;
    doc = only_result(off);
    EXPECT_EQ(doc["verdict"], "clean") << file;
    expect_sampled(doc, 4);
  }
}

// The non-finite scan covers every request: with a sample of one, the NaN that seed 000's
// mechanism produces is found in a request the reference never computed.
TEST_F(ReferenceMode, NanInAnUnsampledRequestIsCaught) {
  CliRun r = kvcheck("run '" + kScenarios + "regressions/new-blocks-not-zeroed.json' "
                     "--sampled-requests 1 --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = only_result(r);
  expect_sampled(doc, 1);
  const json& f = doc["first_failure"];
  ASSERT_TRUE(f.is_object());
  EXPECT_EQ(f["check"], "nonfinite");
  const auto sample = sample_requests(doc["seed"].get<uint64_t>(), f["epoch"].get<int32_t>(),
                                      doc["epochs"][0]["requests"].get<int32_t>(), 1);
  ASSERT_EQ(sample.size(), 1u);
  EXPECT_NE(sample[0], f["request"].get<int32_t>())
      << "the failure must be in a request outside the sample";
}

TEST_F(ReferenceMode, FullIsTheDefaultAndWritesNoSampleSize) {
  write("tiny.json", kTinyScenario);
  for (const char* args : {"", " --reference full"}) {
    CliRun r = kvcheck(std::string("run tiny.json --json -q --out out") + args);
    ASSERT_EQ(r.exit_code, 0) << args << r.err;
    const json doc = only_result(r);
    EXPECT_EQ(doc["reference_mode"], "full") << args;
    EXPECT_FALSE(doc.contains("reference_sampled_requests")) << args;
    for (const json& e : doc["epochs"]) EXPECT_EQ(e["checked_requests"], e["requests"]) << args;
  }
  CliRun table = kvcheck("run tiny.json --out out");
  EXPECT_FALSE(contains(table.out, "reference:")) << table.out;
}

TEST_F(ReferenceMode, FlagsReplaceTheScenariosSetting) {
  write("tiny.json", kTinyScenario);
  // The scenario has no sample size: --reference sampled uses the default, 8 (more than the 2
  // requests, so both are checked).
  CliRun r = kvcheck("run tiny.json --reference sampled --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_sampled(only_result(r), 8);

  write("one.json", tiny_with_checks(R"({"reference": "sampled", "sampled_requests": 1})"));
  r = kvcheck("run one.json --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_sampled(only_result(r), 1);
  r = kvcheck("run one.json --sampled-requests 2 --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_sampled(only_result(r), 2);
  r = kvcheck("run one.json --reference full --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(only_result(r)["reference_mode"], "full");
}

TEST_F(ReferenceMode, TheTableSaysWhatWasSampled) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --sampled-requests 1 --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\nreference: sampled, 1 request per epoch\n")) << r.out;
  r = kvcheck("run tiny.json --sampled-requests 3 --out out");
  EXPECT_TRUE(contains(r.out, "\nreference: sampled, 3 requests per epoch\n")) << r.out;
}

TEST_F(ReferenceMode, BadValuesExit2AndRunNothing) {
  write("tiny.json", kTinyScenario);
  for (const char* args : {"--reference partial", "--reference", "--sampled-requests 0",
                           "--sampled-requests -2", "--sampled-requests x",
                           "--sampled-requests 100001"}) {
    CliRun r = kvcheck(std::string("run tiny.json ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  CliRun both = kvcheck("run tiny.json --reference full --sampled-requests 4");
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_TRUE(contains(both.err, "--sampled-requests: given with --reference full")) << both.err;
  EXPECT_TRUE(both.out.empty()) << both.out;
  EXPECT_TRUE(files_under("results").empty());
}

TEST_F(ReferenceMode, ASampleSizeUnderTheFullReferenceIsAnInvalidScenario) {
  write("bad.json", tiny_with_checks(R"({"sampled_requests": 4})"));
  for (const char* cmd : {"validate bad.json", "run bad.json"}) {
    CliRun r = kvcheck(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_TRUE(contains(r.err, "bad.json: /checks/sampled_requests: got 4, but checks.reference "
                                "is \"full\" (the default)"))
        << cmd << "\n" << r.err;
  }
  // The command line cannot rescue a file that is invalid as written.
  EXPECT_EQ(kvcheck("run bad.json --reference sampled").exit_code, 2);
}

TEST_F(ReferenceMode, HelpDocumentsTheFlags) {
  CliRun r = kvcheck("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--reference", "--sampled-requests", "implies --reference sampled"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
}

}  // namespace
}  // namespace kv::test
