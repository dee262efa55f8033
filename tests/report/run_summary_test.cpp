// run_summary_test.cpp — a run's closing summary: the counts line and one line per problem, from
// result documents as kvcheck writes them.
#include <gtest/gtest.h>

#include "report/run_summary.h"

namespace kv {
namespace {

using nlohmann::json;

json result(const std::string& verdict, const std::string& expected, bool meets) {
  return {{"scenario", "s"}, {"scenario_path", "dir/s.json"}, {"seed", 9},
          {"verdict", verdict}, {"expected", expected}, {"meets_expectation", meets}};
}

TEST(RunSummary, CountsEachOutcomeAndKeepsAProblemLineForEachThatDidNotPass) {
  RunSummary s;
  s.add(result("clean", "clean", true));
  s.add(result("corrupt", "corrupt", true));
  json failed = result("corrupt", "clean", false);
  failed["first_failure"] = {{"epoch", 2}, {"step", 4}, {"request", 7}, {"layer", 0},
                             {"site", "decode"}, {"check", "drift"}, {"value", 0.5},
                             {"tolerance", 0.01}};
  s.add(failed);
  json error = result("error", "clean", false);
  error["error"] = {{"message", "backend op paged_decode crashed (SIGSEGV)"}};
  s.add(error);
  s.add(result("clean", "corrupt", false));
  EXPECT_EQ(s.passed, 2);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.errors, 1);
  EXPECT_FALSE(s.all_passed());
  ASSERT_EQ(s.problems.size(), 3u);
  EXPECT_EQ(s.problems[0],
            "FAILED s (dir/s.json, seed 9): verdict corrupt, expected clean; first failure: "
            "epoch 2, step 4, request 7, layer 0, site decode, check drift: value 0.5 "
            "(tolerance 0.01)");
  EXPECT_EQ(s.problems[1],
            "ERROR s (dir/s.json, seed 9): backend op paged_decode crashed (SIGSEGV)");
  EXPECT_EQ(s.problems[2], "FAILED s (dir/s.json, seed 9): verdict clean, expected corrupt; the "
                           "expected corruption was not found");
}

TEST(RunSummary, AnErrorVerdictIsAnErrorWhateverWasExpected) {
  json r = result("error", "corrupt", true);
  EXPECT_EQ(outcome_of(r), ScenarioOutcome::error);
}

TEST(RunSummary, TheCountsLine) {
  RunSummary s{.passed = 41, .failed = 3, .errors = 0, .could_not_run = 2, .not_run = 0,
               .seconds = 192.4, .problems = {}};
  EXPECT_EQ(summary_line(s), "41 passed, 3 failed, 2 could not run, 0 errors in 3m12s");
  s.errors = 1;
  s.not_run = 5;
  s.seconds = 0.42;
  EXPECT_EQ(summary_line(s), "41 passed, 3 failed, 2 could not run, 1 error, 5 not run in 0.4s");
  RunSummary three;
  three.passed = 3;
  EXPECT_TRUE(three.all_passed());
  three.not_run = 1;
  EXPECT_FALSE(three.all_passed());
}

TEST(RunSummary, ElapsedTimes) {
  EXPECT_EQ(format_elapsed(0.0), "0.0s");
  EXPECT_EQ(format_elapsed(59.94), "59.9s");
  EXPECT_EQ(format_elapsed(60.0), "1m00s");
  EXPECT_EQ(format_elapsed(3725.0), "1h02m05s");
  EXPECT_EQ(format_elapsed(-1.0), "0.0s");
}

}  // namespace
}  // namespace kv
