// attn_state.cuh — the online-softmax state of one query row and its merge.
//
// Convention, used everywhere in kvcheck: the log-sum-exp is the NATURAL log of the sum of
// exp(score), where score = scale * q·k. An attention output with its lse is a state; two states
// over disjoint key sets merge exactly into the state over their union.
//
// Empty states: a row that attended no key has lse = -inf and output 0. Merging two empty states
// gives output 0 and lse -inf, never NaN ((-inf) - (-inf) is never evaluated). A NaN in either
// input propagates to the output: NaN is information and must stay visible to the checks.
#pragma once

#include <cmath>

#include "hd.cuh"

namespace kv {

// Weights with which two states (lse_a, lse_b) combine, and the merged lse.
struct MergeWeights {
  float wa, wb, lse;
};

KV_HD MergeWeights merge_weights(float lse_a, float lse_b) {
  MergeWeights w;
  if (lse_a == -INFINITY && lse_b == -INFINITY) {  // both empty
    w.wa = 0.0f;
    w.wb = 0.0f;
    w.lse = -INFINITY;
    return w;
  }
  // max() would drop a NaN; keep it explicitly so that it reaches the output.
  if (lse_a != lse_a || lse_b != lse_b) {
    w.wa = w.wb = w.lse = NAN;
    return w;
  }
  float m = lse_a > lse_b ? lse_a : lse_b;  // finite or +inf here
  float ea = expf(lse_a - m);
  float eb = expf(lse_b - m);
  float s = ea + eb;
  w.wa = ea / s;
  w.wb = eb / s;
  w.lse = m + logf(s);
  return w;
}

// Running state of the online softmax over a stream of keys, for one query row and one head.
// The caller keeps the accumulator vector `acc` (head_dim floats) next to it.
struct SoftmaxState {
  float m = -INFINITY;  // running max score
  float d = 0.0f;       // running sum of exp(score - m)
};

// Account for a new tile whose max score is `tile_max`; returns the factor by which the existing
// accumulator and d must be rescaled. A tile whose scores are all -inf changes nothing.
KV_HD float softmax_rescale(SoftmaxState& s, float tile_max) {
  if (!(tile_max > s.m)) return 1.0f;  // also when tile_max is -inf or NaN (NaN enters via p)
  float f = (s.m == -INFINITY) ? 0.0f : expf(s.m - tile_max);
  s.d *= f;
  s.m = tile_max;
  return f;
}

// lse of a finished state; -inf when no key was attended.
KV_HD float softmax_lse(const SoftmaxState& s) {
  return (s.d > 0.0f) ? s.m + logf(s.d) : (s.d == 0.0f ? -INFINITY : NAN);
}

}  // namespace kv
