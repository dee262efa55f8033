// tolerances.h — how far an engine output may be from the float64 reference, and why.
//
// Drift is the relative L2 error of one (token, head) row of an attention output:
//   ||out - ref|| / ||ref||.
// Both sides read K/V rounded to the cache dtype, so the cache dtype alone does not set the
// error: what remains is float32 accumulation (~1e-6), K/V values that land on the other side of
// a rounding boundary (the engine rounds a float32 value, the reference a float64 one: one ulp of
// the cache dtype, on rare elements), and the same for the fp8 activation quantisation between
// layers (one e4m3 step, 6-12% of one element, on rare elements), which then moves the next
// layer's inputs by up to about a percent. The defaults sit a factor of a few above the largest
// error measured over many clean seeds and well below what the modelled corruptions produce
// (missing or foreign keys and values: 0.07 to 1 and growing; stale bytes: NaN/Inf).
#pragma once

#include <array>
#include <vector>

#include "device/device.h"
#include "kernels/dtype.cuh"
#include "reference/host/op_reference.h"
#include "result/check_sites.h"
#include "scenario/scenario.h"

namespace kv {

// Per check site (CheckSite order), the drift tolerance; 0 where there is no drift check.
using SiteTolerances = std::array<double, kNumCheckSites>;

// The calibrated defaults (tolerances.cpp: per cache dtype, site and op precision).
SiteTolerances default_tolerances(DType cache_dtype, OpPrecision precision);

// What a scenario is judged with: per site, checks.site_tolerances' value when given; else
// checks.tolerance when given (it covers every drift site); else the calibrated default.
SiteTolerances drift_tolerances(const Scenario& s, OpPrecision precision);

// A checks.site_tolerances value below the calibrated default of its site for this op precision
// (a backend with 16-bit io has wider defaults than kvcheck's ops): clean runs may fail there.
struct TighterSite {
  CheckSite site;
  double given = 0.0;
  double calibrated = 0.0;
};
std::vector<TighterSite> site_tolerances_below_table(const Scenario& s, OpPrecision precision);

// The largest of them over the sites a model of these layer kinds has (the result's and the
// console's single "tolerance").
double largest_tolerance(const SiteTolerances& t, const std::vector<LayerKind>& layers);

// What an op of this precision rounds over a cache of this dtype at each attention-like site
// (op_reference.h), for the op checks' bound (op_checker.h; docs/oracle.md has the table and the
// figures behind it). host_f32: nothing but its float32 arithmetic. cuda_builtin: kvcheck's CUDA
// ops split q and P into bf16 hi + lo halves for the tensor cores (about 16 significant bits),
// except the MLA decode over a 16-bit latent (mla_wgmma, mla_tc), which rounds q and P to bf16.
// half_io: a backend's 16-bit io rounds q and its output (partial outputs too) to bf16, P for
// its tensor cores, and K/V of a cache it does not read natively (f32, fp8 scaled).
using OpRoundings = std::array<OpRounding, kNumCheckSites>;
OpRoundings op_roundings(OpPrecision precision, DType cache_dtype);

// The op checks allow this many times the estimate E of op_reference.h (measured: the largest
// clean error over the calibration runs against E, results/oracle-calibration.md).
inline constexpr double kOpBoundSafety = 4.0;

// The drift denominator never falls below this share of the token's RMS head norm in that layer
// (checker.cpp rel_l2): linear-attention heads can nearly cancel (q·S), and their tiny rows carry
// the same absolute noise as their neighbours.
inline constexpr double kRowNormFloor = 0.5;

// A sampled token is accepted when the reference's logit for it is within this fraction of the
// reference logits' RMS below the reference's best logit: a near-tie may legitimately flip under
// another batch split, a clear winner may not.
inline constexpr double kTokenMarginFraction = 0.05;

}  // namespace kv
