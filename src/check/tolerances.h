// tolerances.h — how far an engine output may be from the float64 reference, and why.
//
// Drift is the relative L2 error of one (token, head) row of an attention output:
//   ||out - ref|| / ||ref||.
// Both sides read K/V rounded to the cache dtype, so the cache dtype alone does not set the
// error: what remains is float32 accumulation (~1e-6), K/V values that land on the other side of
// a rounding boundary (the engine rounds a float32 value, the reference a float64 one: one ulp of
// the cache dtype, on rare elements), and the same for the fp8 activation quantisation between
// layers (one e4m3 step, 6-12% of one element, on rare elements), which then moves the next
// layer's inputs by a fraction of a percent. The defaults sit a factor of a few above the largest
// error measured over many clean seeds (results/tolerances.md) and far below what any modelled
// corruption produces (missing or foreign keys and values give errors of order 0.1 to 1, stale
// bytes give NaN/Inf or huge values).
#pragma once

#include "kernels/dtype.cuh"

namespace kv {

inline double default_drift_tolerance(DType cache_dtype) {
  switch (cache_dtype) {
    case DType::f32: return 1e-2;   // fp8 activation steps dominate, not the cache
    case DType::f16: return 1e-2;   // f16 ulp 2^-11: below the fp8 steps
    case DType::bf16: return 2e-2;  // bf16 ulp 2^-8 on rare K/V elements, plus the fp8 steps
    case DType::fp8_e4m3: return 5e-2;
  }
  return 2e-2;
}

// A sampled token is accepted when the reference's logit for it is within this fraction of the
// reference logits' RMS below the reference's best logit: a near-tie may legitimately flip under
// another batch split, a clear winner may not.
inline constexpr double kTokenMarginFraction = 0.05;

}  // namespace kv
