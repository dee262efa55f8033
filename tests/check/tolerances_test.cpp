// tolerances_test.cpp — what a scenario is judged with: the calibrated table, checks.tolerance
// over every drift site, checks.site_tolerances over single sites.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "check/tolerances.h"
#include "result/check_sites.h"
#include "scenario/field_table.h"
#include "scenario/parse.h"

namespace kv {
namespace {

Scenario parse(const std::string& text) {
  auto r = parse_scenario(text, "t.json");
  if (auto* e = std::get_if<ScenarioError>(&r)) ADD_FAILURE() << e->pointer << ": " << e->message;
  return std::get<Scenario>(r);
}

size_t at(CheckSite s) { return static_cast<size_t>(s); }

TEST(Tolerances, ScenarioWithoutOverridesGetsTheCalibratedTable) {
  const Scenario s = parse(R"({"format": 1, "cache": {"dtype": "bf16"}})");
  for (OpPrecision p : {OpPrecision::host_f32, OpPrecision::cuda_builtin, OpPrecision::half_io}) {
    const SiteTolerances table = default_tolerances(DType::bf16, p);
    EXPECT_EQ(drift_tolerances(s, p), table);
    for (const CheckSiteInfo& info : all_check_sites())
      EXPECT_EQ(table[at(info.site)] > 0.0, has_drift_check(info.site)) << info.name;
  }
}

TEST(Tolerances, SiteTolerancesReplaceTheirSiteOnly) {
  const Scenario s = parse(R"({"format": 1, "model": {"layers": ["attention", "mla"]},
      "checks": {"site_tolerances": {"mla_prefill_with_context": 0.0123, "decode": 0.0456}}})");
  const SiteTolerances table = default_tolerances(DType::bf16, OpPrecision::host_f32);
  const SiteTolerances t = drift_tolerances(s, OpPrecision::host_f32);
  for (const CheckSiteInfo& info : all_check_sites()) {
    const size_t i = at(info.site);
    if (info.site == CheckSite::mla_prefill_with_context)
      EXPECT_EQ(t[i], 0.0123);
    else if (info.site == CheckSite::decode)
      EXPECT_EQ(t[i], 0.0456);
    else
      EXPECT_EQ(t[i], table[i]) << info.name;
  }
}

TEST(Tolerances, SiteTolerancesGoOverTheTolerance) {
  const Scenario s = parse(R"({"format": 1, "checks": {"tolerance": 0.05,
      "site_tolerances": {"prefill": 0.01}}})");
  const SiteTolerances t = drift_tolerances(s, OpPrecision::half_io);
  for (const CheckSiteInfo& info : all_check_sites()) {
    const double want = !has_drift_check(info.site)        ? 0.0
                        : info.site == CheckSite::prefill ? 0.01
                                                          : 0.05;
    EXPECT_EQ(t[at(info.site)], want) << info.name;
  }
  EXPECT_EQ(largest_tolerance(t, s.model.layers), 0.05);
}

// A site tolerance calibrated on kvcheck's ops can be below the defaults of a backend with 16-bit
// io: the run says so (harness.cpp warns) instead of failing clean rows without a word.
TEST(Tolerances, SiteTolerancesBelowTheTableAreNamedPerPrecision) {
  const double bf16_decode_f32 = default_tolerances(DType::bf16, OpPrecision::host_f32)[at(
      CheckSite::decode)];
  const double bf16_decode_half = default_tolerances(DType::bf16, OpPrecision::half_io)[at(
      CheckSite::decode)];
  ASSERT_LT(bf16_decode_f32, bf16_decode_half);
  const double between = 0.5 * (bf16_decode_f32 + bf16_decode_half);
  const Scenario s = parse(R"({"format": 1, "checks": {"site_tolerances": {"decode": )" +
                           std::to_string(between) + "}}}");
  EXPECT_TRUE(site_tolerances_below_table(s, OpPrecision::host_f32).empty());
  const std::vector<TighterSite> below = site_tolerances_below_table(s, OpPrecision::half_io);
  ASSERT_EQ(below.size(), 1u);
  EXPECT_EQ(below[0].site, CheckSite::decode);
  EXPECT_DOUBLE_EQ(below[0].given, std::stod(std::to_string(between)));
  EXPECT_EQ(below[0].calibrated, bf16_decode_half);
}

// The format's keys under checks.site_tolerances, and the table tolerances.cpp maps them with,
// are the drift check sites' names, all of them: a site added to check_sites.h without a key
// (or a key for a site without drift) fails.
TEST(Tolerances, SiteToleranceKeysAreTheDriftSites) {
  std::set<std::string> keys, table, sites;
  for (const FieldInfo& f : scenario_field_table())
    if (f.parent() == "/checks/site_tolerances") keys.insert(f.key());
  for (const SiteToleranceKey& key : kSiteToleranceKeys) {
    table.insert(key.name);
    // The layer kind the validator requires is the one whose rows the site judges.
    const std::optional<CheckSite> site = find_check_site(key.name);
    ASSERT_TRUE(site.has_value()) << key.name;
    bool judged = false;
    for (bool decode : {false, true})
      for (bool context : {false, true}) judged |= mixer_site(key.kind, decode, context) == *site;
    EXPECT_TRUE(judged) << key.name << " is not a site of " << to_string(key.kind) << " layers";
  }
  EXPECT_EQ(table, keys);
  for (const CheckSiteInfo& info : all_check_sites())
    if (has_drift_check(info.site)) sites.insert(std::string(info.name));
  EXPECT_EQ(keys, sites);
}

// The op checks' roundings follow what each of kvcheck's CUDA kernels rounds its tensor-core
// operands to (tolerances.cpp, cuda_builtin_operands): a bound with too coarse a rounding lets a
// 10x error through, one too fine cries wolf (the fp8 MLA decode on f16 operands was 17.7x over
// a hi + lo bound on an H100).
TEST(OpRoundings, CudaBuiltinTakesWhatEachKernelRounds) {
  auto u_q = [](DType dtype, CheckSite site) {
    const OpRounding r = op_roundings(OpPrecision::cuda_builtin, dtype)[static_cast<size_t>(site)];
    EXPECT_EQ(r.u_q, r.u_p);
    EXPECT_EQ(r.u_kv, 0.0);
    EXPECT_EQ(r.u_out, 0.0);
    return r.u_q;
  };
  EXPECT_EQ(u_q(DType::bf16, CheckSite::mla_decode), kUnitRoundoffBf16);
  EXPECT_EQ(u_q(DType::fp8_e4m3, CheckSite::mla_decode), kUnitRoundoffF16);
  for (DType d : {DType::bf16, DType::fp8_e4m3})
    for (CheckSite site : {CheckSite::mla_prefill, CheckSite::mla_prefill_with_context})
      EXPECT_EQ(u_q(d, site), kUnitRoundoffBf16x2);
  EXPECT_EQ(u_q(DType::bf16, CheckSite::decode), kUnitRoundoffBf16x2);
  EXPECT_EQ(u_q(DType::fp8_e4m3, CheckSite::decode), 0.0);
  for (DType d : {DType::bf16, DType::fp8_e4m3})
    for (CheckSite site : {CheckSite::prefill, CheckSite::prefill_with_context})
      EXPECT_EQ(u_q(d, site), 0.0);
  for (size_t i = 0; i < kNumCheckSites; ++i)
    EXPECT_EQ(u_q(DType::f32, static_cast<CheckSite>(i)), 0.0);
  // The host ops: float32 arithmetic only.
  for (const OpRounding& r : op_roundings(OpPrecision::host_f32, DType::bf16))
    EXPECT_EQ(r.u_q + r.u_p + r.u_kv + r.u_out, 0.0);
}

}  // namespace
}  // namespace kv
