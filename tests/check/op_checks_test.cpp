// op_checks_test.cpp — the op checks (check/op_checker.h) through whole runs on the host: clean
// scenarios stay within the bound at every site, a broken op is caught by them at the op with a
// wide margin, and with checks.op_drift off the end-to-end checks still catch it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "check/harness.h"
#include "device/host_device.h"
#include "scenario/parse.h"
#include "support/shipped_scenario.h"

namespace kv {
namespace {

Scenario load(const std::string& name) { return test::shipped_scenario(name); }

RunResult run(const Scenario& s) {
  HostDevice dev;
  return run_scenario(s, dev);
}

// Every attention-like site of `sites` was judged by the op checks in some epoch (a later epoch
// may have no row of a site: prefix hits leave no prefill without context), always within the
// bound. Where every checked row is op-judged (`all_rows_judged`: no hybrid recompute chunks),
// the end-to-end error is within the sum of its two parts, the op's own and its inputs'
// (‖out − ref‖ ≤ ‖out − op64‖ + ‖op64 − ref‖; 1% for the op part's other denominator).
void expect_within_bound(const RunResult& r, const std::vector<CheckSite>& sites,
                         bool all_rows_judged = true) {
  ASSERT_TRUE(r.op_rounding.has_value());
  EXPECT_EQ(r.op_bound_safety, kOpBoundSafety);
  for (CheckSite site : sites) {
    const size_t i = static_cast<size_t>(site);
    double largest = -1.0;
    for (const EpochStats& e : r.epochs) {
      largest = std::max(largest, e.site_max_op_bound_ratio[i]);
      EXPECT_LE(e.site_max_op_bound_ratio[i], 1.0) << site_name(site) << " in epoch " << e.epoch;
      EXPECT_LT(e.site_max_op_error[i], 1e-5) << site_name(site) << " in epoch " << e.epoch;
      if (e.site_max_op_bound_ratio[i] < 0.0) continue;  // no row of the site this epoch
      EXPECT_GE(e.site_max_input_error[i], 0.0) << site_name(site) << " in epoch " << e.epoch;
      if (all_rows_judged)
        EXPECT_LE(e.site_max_rel_error[i],
                  1.01 * e.site_max_op_error[i] + e.site_max_input_error[i])
            << site_name(site) << " in epoch " << e.epoch;
    }
    EXPECT_GT(largest, 0.0) << r.scenario << ": no row of " << site_name(site) << " judged";
  }
}

TEST(OpChecks, CleanRunsAreWithinTheBoundAtEverySite) {
  const RunResult smoke = run(load("smoke.json"));
  EXPECT_EQ(smoke.verdict, Verdict::clean);
  expect_within_bound(smoke, {CheckSite::decode, CheckSite::prefill,
                              CheckSite::prefill_with_context});
  // The K/V rows are read back through the block table at awkward block sizes, in both layouts
  // and fp8 (a row read from the wrong place would be far outside the bound).
  for (int32_t block_size : {1, 3, 7, 16})
    for (KvLayout layout : {KvLayout::kv_separate, KvLayout::kv_interleaved})
      for (DType dtype : {DType::bf16, DType::fp8_e4m3}) {
        Scenario s = load("smoke.json");
        s.cache.num_blocks = 48 * 16 / block_size + 1;
        s.cache.block_size = block_size;
        s.cache.layout = layout;
        s.cache.dtype = dtype;
        if (dtype == DType::fp8_e4m3) s.cache.k_scale = s.cache.v_scale = 0.25f;
        s.workload.epochs = 1;
        const RunResult r = run(s);
        EXPECT_EQ(r.verdict, Verdict::clean) << block_size;
        expect_within_bound(r, {CheckSite::decode, CheckSite::prefill,
                                CheckSite::prefill_with_context});
      }
  // GQA 7 at block size 1, fp8 at block size 2, and MLA over an interleaved hybrid pool.
  for (const char* name : {"shapes/block-size-1-gqa7.json", "shapes/block-size-2-gqa4-fp8.json"})
    expect_within_bound(run(load(name)), {CheckSite::decode, CheckSite::prefill,
                                          CheckSite::prefill_with_context});
  expect_within_bound(run(load("shapes/hybrid-kv-page-above-state.json")),
                      {CheckSite::mla_decode, CheckSite::mla_prefill,
                       CheckSite::mla_prefill_with_context},
                      /*all_rows_judged=*/false);
}

TEST(OpChecks, CatchABrokenOpAtTheOpWithAWideMargin) {
  struct Case {
    const char* scenario;
    CheckSite site;
  };
  for (const Case& c : {Case{"regressions/gather-assumes-contiguous.json",
                             CheckSite::prefill_with_context},
                        Case{"seeds/003-fp8-mla-graph-metadata.json", CheckSite::mla_decode}}) {
    const RunResult r = run(load(c.scenario));
    ASSERT_TRUE(r.first_failure.has_value()) << c.scenario;
    EXPECT_EQ(r.first_failure->check, "op_drift") << c.scenario;
    EXPECT_EQ(r.first_failure->site, c.site) << c.scenario;
    EXPECT_GT(r.first_failure->value, 1000 * r.first_failure->tolerance) << c.scenario;
  }
}

TEST(OpChecks, OffLeavesTheEndToEndChecksAndNoOpFigures) {
  Scenario s = load("regressions/gather-assumes-contiguous.json");
  s.checks.op_drift = false;
  const RunResult r = run(s);
  EXPECT_EQ(r.verdict, Verdict::corrupt);
  ASSERT_TRUE(r.first_failure.has_value());
  EXPECT_NE(r.first_failure->check, "op_drift");
  EXPECT_FALSE(r.op_rounding.has_value());
  for (const EpochStats& e : r.epochs) {
    for (double ratio : e.site_max_op_bound_ratio) EXPECT_EQ(ratio, -1.0);
    for (double input : e.site_max_input_error) EXPECT_EQ(input, -1.0);
  }
  Scenario clean = load("smoke.json");
  clean.checks.op_drift = false;
  EXPECT_EQ(run(clean).verdict, Verdict::clean);
}

}  // namespace
}  // namespace kv
