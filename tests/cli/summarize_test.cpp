// summarize_test.cpp — stored results: `kvcheck summarize` (table, Markdown, JSON; exit 1 unless
// every run passed; exit 2 for a file that is not a result) and `kvcheck run --baseline`
// (--update-baseline writes, a later run compares: a changed verdict is exit 1 on a line of its
// own; a bad store is exit 2 before anything runs).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

class Summarize : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    write("tiny.json", kTinyScenario);
    write("poison.json", kPoisonScenario);
  }
};

TEST_F(Summarize, StoredResultsGiveTheRunsSummaryLineAndEachProblem) {
  ASSERT_EQ(kvcheck("run tiny.json poison.json --out out -q").exit_code, 0);
  CliRun r = kvcheck("summarize out");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2 passed, 0 failed, 0 could not run, 0 errors in")) << r.out;
  EXPECT_TRUE(contains(r.out, "tiny ")) << r.out;
  r = kvcheck("summarize out --brief");  // the line alone (scripts/test.sh's last)
  EXPECT_EQ(r.out.substr(0, 40), "2 passed, 0 failed, 0 could not run, 0 e") << r.out;
  // A second folder with a failed run: exit 1 and its FAILED line.
  ASSERT_EQ(kvcheck("run poison.json --regression new-blocks-not-zeroed --out bad -q").exit_code, 1);
  r = kvcheck("summarize out bad --markdown");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out, "**kvcheck: 2 passed, 1 failed, 0 could not run, 0 errors")) << r.out;
  EXPECT_TRUE(contains(r.out, "| poison | host | - | 3 | FAILED | corrupt (clean) | nan |")) << r.out;
  r = kvcheck("summarize out bad --json");
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["summary"]["failed"], 1);
  EXPECT_EQ(doc["runs"].size(), 3u);
  EXPECT_EQ(doc["summary"]["problems"].size(), 1u);
}

// --epochs: a row per run and epoch, the figures of the result's own epochs rows (the seeds
// table: a regression run and its clean twin side by side, --clean-twins).
TEST_F(Summarize, EpochsGiveARowPerRunAndEpochWithTheResultsFigures) {
  ASSERT_EQ(kvcheck("run poison.json --regression new-blocks-not-zeroed --expect corrupt "
                    "--clean-twins --out out -q")
                .exit_code,
            0);
  CliRun r = kvcheck("summarize out --epochs --markdown");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(read_file(dir_ / "out" / "poison.json"));
  ASSERT_EQ(doc["epochs"].size(), 2u);
  const json& e2 = doc["epochs"][1];
  ASSERT_GT(e2["nonfinite_outputs"].get<int64_t>(), 0) << "epoch 2 reads the poisoned blocks";
  const std::string row = fmt::format(
      "| poison | new-blocks-not-zeroed | corrupt | 2 | {:.3f} | {} | nan | {:.1f} | - |",
      e2["clean_request_fraction"].get<double>(), e2["nonfinite_outputs"].get<int64_t>(),
      1e6 * e2["forward_seconds"].get<double>() / e2["steps"].get<double>());
  EXPECT_TRUE(contains(r.out, row)) << row << "\n" << r.out;
  EXPECT_TRUE(contains(r.out, "| poison.clean | - | clean | 2 | 1.000 | 0 | ")) << r.out;
  r = kvcheck("summarize out --epochs");  // the text table
  EXPECT_TRUE(contains(r.out, "zero-init us/step")) << r.out;
  EXPECT_TRUE(contains(r.out, "poison.clean")) << r.out;
  EXPECT_EQ(kvcheck("summarize out --epochs --json").exit_code, 2);  // one or the other
}

TEST_F(Summarize, AFileThatIsNotAResultIsExit2NamingIt) {
  CliRun r = kvcheck("summarize tiny.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "tiny.json: no \"schema\" string: not a kvcheck result")) << r.err;
  fs::create_directories(dir_ / "empty");
  r = kvcheck("summarize empty");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "empty: the folder holds no result file")) << r.err;
  write("broken.json", "{");
  EXPECT_EQ(kvcheck("summarize broken.json").exit_code, 2);
}

TEST_F(Summarize, ABaselineIsWrittenThenComparedAndAChangeIsExit1) {
  CliRun w = kvcheck("run tiny.json poison.json --baseline base --update-baseline -q --no-out");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_TRUE(contains(w.out, "baseline: 2 result(s) written to base")) << w.out;
  CliRun same = kvcheck("run tiny.json poison.json --baseline base -q --no-out");
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(contains(same.out, "baseline: 2 compared, 0 changed (base)")) << same.out;
  // Corrupt where the baseline was clean, expected corrupt so the run itself passes: the
  // baseline alone fails it.
  CliRun changed = kvcheck("run poison.json --regression new-blocks-not-zeroed --expect corrupt "
                           "--baseline base -q --no-out");
  EXPECT_EQ(changed.exit_code, 1) << changed.err;
  EXPECT_TRUE(contains(changed.out, "1 passed, 0 failed")) << changed.out;
  EXPECT_TRUE(contains(changed.out, "CHANGED poison (poison.json, seed 3): verdict corrupt, was "
                                    "clean"))
      << changed.out;
  // The same comparison from stored results.
  ASSERT_EQ(kvcheck("run poison.json --seed 3 --out now -q").exit_code, 0);
  EXPECT_EQ(kvcheck("summarize now --baseline base").exit_code, 0);
  // A store that is not one: exit 2, nothing run.
  CliRun bad = kvcheck("run tiny.json --baseline tiny.json --out out");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "--baseline: tiny.json: no \"schema\" string")) << bad.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace kv::test
