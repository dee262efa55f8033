// coverage_test.cpp — the run's coverage (totals over epochs, pool turnovers), the gaps named for
// the regressions that were on, and how both appear in the result JSON and the console summary.
#include "report/coverage.h"

#include <gtest/gtest.h>

#include <sstream>

#include "report/console_table.h"
#include "report/result_json.h"
#include "sample_result.h"

namespace kv {
namespace {

using nlohmann::json;

std::vector<EpochStats> two_epochs() {
  EpochStats a, b;
  a.usable_blocks = b.usable_blocks = 50;
  a.blocks_allocated = 40;
  b.blocks_allocated = 35;
  a.blocks_recycled = 0;
  b.blocks_recycled = 25;
  a.graph_replays = 3;
  b.graph_replays = 4;
  a.padded_rows_replayed = 1;
  b.replayed_multiblock_rows = 9;
  a.prefill_rows_without_context = 100;
  b.prefill_context_tokens = 64;
  b.mixed_prefill_steps = 2;
  b.boundary_prefix_hits = 1;
  return {a, b};
}

TEST(Coverage, SumsEveryMechanismOverTheEpochs) {
  const RunCoverage c = run_coverage(two_epochs());
  EXPECT_EQ(c.usable_blocks, 50);
  EXPECT_EQ(c.blocks_allocated, 75);
  EXPECT_DOUBLE_EQ(c.pool_turnovers(), 1.5);
  EXPECT_EQ(c.count(Mechanism::blocks_recycled), 25);
  EXPECT_EQ(c.count(Mechanism::graph_replays), 7);
  EXPECT_EQ(c.count(Mechanism::padded_rows_replayed), 1);
  EXPECT_EQ(c.count(Mechanism::replayed_multiblock_rows), 9);
  EXPECT_EQ(c.count(Mechanism::prefill_rows_without_context), 100);
  EXPECT_EQ(c.count(Mechanism::prefill_context_tokens), 64);
  EXPECT_EQ(c.count(Mechanism::mixed_prefill_steps), 2);
  EXPECT_EQ(c.count(Mechanism::preemptions), 0);
  EXPECT_EQ(c.count(Mechanism::boundary_prefix_hits), 1);
  EXPECT_DOUBLE_EQ(run_coverage({}).pool_turnovers(), 0.0) << "no epoch: no pool to divide by";
}

TEST(Coverage, EachMechanismReadsItsOwnCounter) {
  // A distinct value per counter: a table entry pointing at the wrong field shows.
  EpochCounters c;
  int64_t v = 1;
  for (int64_t EpochCounters::*f :
       {&EpochCounters::blocks_recycled, &EpochCounters::graph_replays,
        &EpochCounters::padded_rows_replayed, &EpochCounters::replayed_multiblock_rows,
        &EpochCounters::prefill_rows_without_context, &EpochCounters::prefill_context_tokens,
        &EpochCounters::mixed_prefill_steps, &EpochCounters::preemptions,
        &EpochCounters::prefix_hit_blocks, &EpochCounters::boundary_prefix_hits,
        &EpochCounters::empty_decode_splits})
    c.*f = v++;
  for (const MechanismInfo& m : all_mechanisms())
    EXPECT_EQ(mechanism_count(c, m.id), static_cast<int64_t>(m.id) + 1) << m.name;
}

Scenario with_regression(Regression r) {
  Scenario s;
  s.regressions = RegressionSet{r};
  s.faults.freed_blocks = PoisonPattern::nan;
  s.cache.dtype = DType::fp8_e4m3;
  s.cache.layout = KvLayout::kv_interleaved;
  return s;
}

TEST(Coverage, AGapForEachNeededMechanismTheRunNeverExercised) {
  RunCoverage none;
  none.usable_blocks = 191;
  none.blocks_allocated = 120;
  const auto gaps = coverage_gaps(with_regression(Regression::new_blocks_not_zeroed), none);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].regression, "new-blocks-not-zeroed");
  EXPECT_EQ(gaps[0].mechanism, "blocks_recycled");
  EXPECT_EQ(gaps[0].message, "needs recycled blocks, but the pool never turned over (120 of 191 "
                             "usable blocks handed out, none twice)");

  RunCoverage reached = none;
  reached.totals[static_cast<size_t>(Mechanism::blocks_recycled)] = 1;
  EXPECT_TRUE(coverage_gaps(with_regression(Regression::new_blocks_not_zeroed), reached).empty());
  EXPECT_TRUE(coverage_gaps(Scenario{}, none).empty()) << "no regression on: nothing to reach";
}

TEST(Coverage, EveryRegressionNamesWhatItNeedsWhenNothingRan) {
  for (const RegressionInfo& r : all_regressions()) {
    const auto gaps = coverage_gaps(with_regression(r.id), RunCoverage{});
    ASSERT_EQ(gaps.size(), r.needs.size()) << r.name;
    for (size_t i = 0; i < gaps.size(); ++i) {
      EXPECT_EQ(gaps[i].regression, r.name);
      EXPECT_EQ(gaps[i].mechanism, mechanism_info(r.needs[i]).name);
      EXPECT_EQ(gaps[i].message.rfind("needs ", 0), 0u) << gaps[i].message;
    }
  }
}

TEST(Coverage, GraphGapsSayWhetherAnyGraphReplayed) {
  Scenario s = with_regression(Regression::padded_rows_in_reduction);
  RunCoverage c;
  EXPECT_EQ(coverage_gaps(s, c)[0].message,
            "needs graph replays with padded rows, but no step replayed a CUDA graph "
            "(engine.cuda_graphs.mode is off)");
  c.totals[static_cast<size_t>(Mechanism::graph_replays)] = 12;
  EXPECT_EQ(coverage_gaps(s, c)[0].message,
            "needs graph replays with padded rows, but each of the 12 graph replays ran a full "
            "capture batch (no padded rows)");
}

TEST(Coverage, SettingsThatRuleARegressionOutAreNamedByTheirField) {
  RunCoverage all;  // every mechanism exercised: only settings can be in the way
  all.totals.fill(1);
  Scenario s = with_regression(Regression::graph_metadata_not_persistent);
  EXPECT_TRUE(coverage_gaps(s, all).empty());
  s.cache.dtype = DType::bf16;
  auto gaps = coverage_gaps(s, all);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].mechanism, "cache.dtype");
  EXPECT_EQ(gaps[0].message.rfind("needs an fp8_e4m3 cache, but the cache is bf16", 0), 0u);

  s = with_regression(Regression::gather_assumes_contiguous);
  EXPECT_TRUE(coverage_gaps(s, all).empty());
  s.cache.layout = KvLayout::kv_separate;
  ASSERT_EQ(coverage_gaps(s, all).size(), 1u);
  EXPECT_EQ(coverage_gaps(s, all)[0].mechanism, "cache.layout");

  s = with_regression(Regression::padded_rows_in_reduction);
  s.engine.zero_init_outputs = true;
  ASSERT_EQ(coverage_gaps(s, all).size(), 1u);
  EXPECT_EQ(coverage_gaps(s, all)[0].mechanism, "engine.zero_init_outputs");

  s = with_regression(Regression::new_blocks_not_zeroed);
  EXPECT_TRUE(coverage_gaps(s, all).empty());
  s.engine.zero_new_blocks = {LayerKind::linear};
  s.faults.freed_blocks = PoisonPattern::none;
  gaps = coverage_gaps(s, all);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].mechanism, "engine.zero_new_blocks");
  EXPECT_EQ(gaps[1].mechanism, "faults.freed_blocks");
  // Linear-attention state in a hybrid pool puts non-finite bytes in recycled blocks unpoisoned.
  s.engine.zero_new_blocks = {LayerKind::attention};
  s.model.layers = {LayerKind::attention, LayerKind::linear};
  s.cache.pool = PoolKind::hybrid;
  EXPECT_TRUE(coverage_gaps(s, all).empty());
  EXPECT_TRUE(coverage_gaps(s, all, true).empty()) << "an engine-level one: any prefill path";

  // A backend's fused prefill takes the two prefill-chain regressions out of reach.
  s = with_regression(Regression::merge_ignores_context_count);
  EXPECT_TRUE(coverage_gaps(s, all).empty());
  ASSERT_EQ(coverage_gaps(s, all, true).size(), 1u);
  EXPECT_EQ(coverage_gaps(s, all, true)[0].mechanism, "backend.paged_prefill");
}

TEST(Coverage, TheResultCarriesCoverageAndGaps) {
  RunResult r = test::sample_result();
  r.epochs = two_epochs();
  r.coverage_gaps = {{"new-blocks-not-zeroed", "blocks_recycled", "needs recycled blocks, but"}};
  const json doc = to_json(r);
  const json& c = doc["coverage"];
  EXPECT_EQ(c["usable_blocks"], 50);
  EXPECT_EQ(c["blocks_allocated"], 75);
  EXPECT_DOUBLE_EQ(c["pool_turnovers"].get<double>(), 1.5);
  for (const MechanismInfo& m : all_mechanisms())
    EXPECT_EQ(c[std::string(m.name)], run_coverage(r.epochs).count(m.id)) << m.name;
  EXPECT_EQ(c.size(), kNumMechanisms + 3);
  EXPECT_EQ(doc["coverage_gaps"],
            json::parse(R"([{"regression": "new-blocks-not-zeroed", "mechanism":
                "blocks_recycled", "message": "needs recycled blocks, but"}])"));
  EXPECT_EQ(doc["epochs"][1]["blocks_recycled"], 25);
  EXPECT_EQ(doc["epochs"][1]["boundary_prefix_hits"], 1);
  EXPECT_EQ(doc["epochs"][0]["prefill_rows_without_context"], 100);
  EXPECT_EQ(to_json(test::sample_result())["coverage_gaps"], json::array());
}

TEST(Coverage, TheConsoleSummaryHasACoverageLineAndOneLinePerGap) {
  RunResult r = test::sample_result();
  r.epochs = two_epochs();
  std::ostringstream os;
  print_run(os, r, ConsoleStyle{});
  const std::string out = os.str();
  const size_t at = out.find("coverage: blocks recycled 25 (1.50 pool turnovers), graph replays 7");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_LT(at, out.find("verdict:")) << "coverage comes before the verdict";
  std::istringstream lines(out.substr(at));
  for (std::string line; std::getline(lines, line) && line.rfind("verdict", 0) != 0;)
    EXPECT_LE(line.size(), 100u) << line;
  EXPECT_NE(out.find("boundary prefix hits 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("not reached:"), std::string::npos);

  r.coverage_gaps = {{"new-blocks-not-zeroed", "blocks_recycled", "needs recycled blocks, but x"}};
  std::ostringstream with_gap;
  print_run(with_gap, r, ConsoleStyle{});
  const std::string line = "  not reached: new-blocks-not-zeroed needs recycled blocks, but x\n";
  EXPECT_NE(with_gap.str().find(line), std::string::npos) << with_gap.str();
}

}  // namespace
}  // namespace kv
