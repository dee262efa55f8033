// validate_test.cpp — scenario errors reach the user (file, place, hint) with exit 2, for both
// `validate` and `run`, and a run with any invalid file runs nothing and writes nothing.
#include "cli_runner.h"

namespace kv::test {
namespace {

using Validate = CliTest;

TEST_F(Validate, ValidFilesPrintOk) {
  write("a.json", kTinyScenario);
  write("b.json", kPoisonScenario);
  CliRun r = kvcheck("validate a.json b.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("ok a.json\n")) << r.out;  // then a.json's estimate
  EXPECT_TRUE(contains(r.out, "\nok b.json\n")) << r.out;
}

TEST_F(Validate, MalformedJsonNamesLineAndColumn) {
  write("bad.json", "{\n  \"format\": 1,\n  \"model\": {\"layers\": 1,}\n}\n");
  CliRun r = kvcheck("validate bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "bad.json")) << r.err;
  EXPECT_TRUE(contains(r.err, "line 3")) << r.err;
  EXPECT_TRUE(contains(r.err, "column")) << r.err;
  EXPECT_FALSE(contains(r.out, "ok")) << r.out;
}

TEST_F(Validate, UnknownKeySuggestsTheKnownOne) {
  write("typo.json", R"({"format": 1, "workload": {"requets": 2}})");
  CliRun r = kvcheck("validate typo.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "/workload/requets")) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean \"requests\"")) << r.err;
}

TEST_F(Validate, WrongTypeNamesThePointer) {
  write("type.json", R"({"format": 1, "workload": {"requests": "eight"}})");
  CliRun r = kvcheck("validate type.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "type.json: /workload/requests")) << r.err;
}

// Renamed values (scenario/old_spellings.h): still valid, with one warning per file on stderr.
TEST_F(Validate, OldSpellingsWarnOncePerFileAndStillValidate) {
  write("old.json", R"({"format": 1, "model": {"layers": 1},
                        "cache": {"layout": "plain", "pool": "separate"},
                        "workload": {"requests": 2, "prompt_len": 4, "new_tokens": 2}})");
  write("new.json", R"({"format": 1, "model": {"layers": 1},
                        "cache": {"layout": "kv_separate", "pool": "per_layer"},
                        "workload": {"requests": 2, "prompt_len": 4, "new_tokens": 2}})");
  CliRun r = kvcheck("validate old.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("ok old.json\n")) << r.out;
  EXPECT_EQ(r.err,
            "warning: old.json: deprecated spellings, read as the new ones: /cache/layout "
            "\"plain\" is now \"kv_separate\"; /cache/pool \"separate\" is now \"per_layer\"; "
            "rename them in the file\n");
  CliRun now = kvcheck("validate new.json");
  EXPECT_EQ(now.exit_code, 0) << now.err;
  EXPECT_EQ(now.err, "");
  CliRun run = kvcheck("run old.json new.json -q --out out");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("deprecated"), run.err.rfind("deprecated")) << run.err;
  EXPECT_TRUE(contains(run.err, "warning: old.json: deprecated spellings")) << run.err;
}

TEST_F(Validate, MissingFileIsBadInput) {
  CliRun r = kvcheck("validate nowhere.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "nowhere.json")) << r.err;
}

TEST_F(Validate, OneInvalidAmongValidStillFails) {
  write("good.json", kTinyScenario);
  write("bad.json", R"({"format": 2})");
  CliRun r = kvcheck("validate good.json bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.starts_with("ok good.json\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "ok bad.json")) << r.out;
  EXPECT_TRUE(contains(r.err, "bad.json: /format")) << r.err;
}

// Every kind of invalid input stops `run` before anything runs: no table, no result file, even
// for the valid file named first.
TEST_F(Validate, RunWithAnInvalidFileRunsNothing) {
  write("good.json", kTinyScenario);
  write("syntax.json", "{\"format\": 1,,}");
  write("typo.json", R"({"format": 1, "workload": {"requets": 2}})");
  write("type.json", R"({"format": 1, "seed": "seven"})");
  for (const char* bad : {"syntax.json", "typo.json", "type.json", "missing.json"}) {
    CliRun r = kvcheck(std::string("run good.json ") + bad + " --out out");
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, bad)) << r.err;
    EXPECT_TRUE(r.out.empty()) << bad << ": " << r.out;
    EXPECT_TRUE(files_under("out").empty()) << bad;
    EXPECT_TRUE(files_under("results").empty()) << bad;
  }
}

TEST_F(Validate, RunReportsEveryInvalidFile) {
  write("a.json", R"({"format": 1, "seed": "seven"})");
  write("b.json", R"({"format": 1, "workload": {"requets": 2}})");
  CliRun r = kvcheck("run a.json b.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "a.json: /seed")) << r.err;
  EXPECT_TRUE(contains(r.err, "b.json: /workload/requets")) << r.err;
}

}  // namespace
}  // namespace kv::test
