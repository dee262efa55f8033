// baseline_test.cpp — a run against stored results: a changed verdict or first failure, and a
// site's drift grown past the factor and a tenth of its tolerance, are changes; smaller growth,
// new runs and runs the store lacks are not. And result documents to records: NaN stays NaN.
#include "report/baseline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "report/result_json.h"
#include "report/result_record.h"
#include "sample_result.h"

namespace kv {
namespace {

ResultRecord record(double decode_error, std::string verdict = "clean") {
  ResultRecord r;
  r.name = "s.seed1";
  r.scenario_path = "scenarios/./s.json";
  r.device = "host";
  r.seed = 1;
  r.verdict = std::move(verdict);
  r.expected = "clean";
  r.site_max_error = {{"decode", decode_error}};
  r.site_tolerance = {{"decode", 0.01}};
  return r;
}

TEST(Baseline, AnUnchangedRunIsCompared) {
  const auto c = compare_with_baseline({record(1e-4)}, {record(1e-4)});
  EXPECT_EQ(c.compared, 1u);
  EXPECT_FALSE(c.changed());
  EXPECT_EQ(baseline_line(c), "baseline: 1 compared, 0 changed");
}

TEST(Baseline, AChangedVerdictOrFirstFailureIsAChange) {
  auto c = compare_with_baseline({record(1e-4, "corrupt")}, {record(1e-4)});
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0], "CHANGED s.seed1 (scenarios/./s.json, seed 1): verdict corrupt, was clean");
  ResultRecord now = record(1e-4, "corrupt"), was = record(1e-4, "corrupt");
  now.first_failure = FailureSpot{.epoch = 2, .step = 3, .site = "decode"};
  was.first_failure = FailureSpot{.epoch = 2, .step = 5, .site = "decode"};
  c = compare_with_baseline({now}, {was});
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_NE(c.changes[0].find("first failure epoch 2 step 3 at decode, was epoch 2 step 5 at "
                              "decode"),
            std::string::npos)
      << c.changes[0];
}

TEST(Baseline, DriftThatGrowsPastTheFactorAndATenthOfTheToleranceIsAChange) {
  // 3x and +0.0015 (a tenth of the tolerance is 0.001): a change.
  auto c = compare_with_baseline({record(0.00225)}, {record(0.00075)});
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_NE(c.changes[0].find("site decode largest relative error 0.00225, was 0.00075 (3.0x"),
            std::string::npos)
      << c.changes[0];
  // 3x but +0.0002, under a tenth of the tolerance: rounding noise, not a change.
  EXPECT_FALSE(compare_with_baseline({record(0.0003)}, {record(0.0001)}).changed());
  // +0.002 but 1.5x: under the factor.
  EXPECT_FALSE(compare_with_baseline({record(0.006)}, {record(0.004)}).changed());
  // The factor is the caller's.
  EXPECT_TRUE(compare_with_baseline({record(0.006)}, {record(0.004)}, 1.2).changed());
}

TEST(Baseline, RunsWithoutAStoredResultAreCountedNotChanged) {
  ResultRecord other = record(1e-4);
  other.seed = 2;
  ResultRecord backend = record(1e-4);
  backend.backend = "flashinfer";
  const auto c = compare_with_baseline({other, backend, record(1e-4)}, {record(1e-4)});
  EXPECT_EQ(c.compared, 1u);
  EXPECT_EQ(c.without, 2u);
  EXPECT_FALSE(c.changed());
  EXPECT_EQ(baseline_line(c), "baseline: 1 compared, 0 changed, 2 without a stored result");
}

TEST(ResultRecord, ReadsADocumentAndKeepsNaN) {
  RunResult r = test::sample_result();
  const ResultRecord rec = record_of(to_json(r), "f.json");
  EXPECT_EQ(rec.name, "sample");
  EXPECT_EQ(rec.verdict, "corrupt");
  EXPECT_EQ(rec.file, "f.json");
  nlohmann::json doc = to_json(r);
  doc["epochs"][0]["max_rel_error"] = "nan";
  doc["epochs"][0]["max_rel_error_by_site"] = {{"decode", "nan"}};
  const ResultRecord nan = record_of(doc);
  EXPECT_TRUE(std::isnan(nan.max_rel_error));
  EXPECT_TRUE(std::isnan(nan.site_max_error.at("decode")));
  EXPECT_THROW(record_of(nlohmann::json{{"schema", "other/1"}}), std::runtime_error);
  EXPECT_THROW(record_of(nlohmann::json::array()), std::runtime_error);
}

}  // namespace
}  // namespace kv
