// varlen_attention.cpp — host op: attention of query rows over contiguous float K/V per sequence
// (the context part and the new-token part of a chunked prefill).
//
// Non-causal: every query of sequence i sees all keys of sequence i. Causal: query j sees keys
// 0..j. GQA: q head h reads kv head h / (num_q_heads / num_kv_heads). Exact softmax per (row, head)
// in two passes with float accumulation; lse is the natural log. A row with no keys gets output 0
// and lse -inf (the empty state of attn_state.cuh). Scores use head_dim features of q and k; the
// output of a head is the first v_dim features of its V row (MLA), written at h * v_dim. K and V
// elements are read as the cache would store them (kv_dtype with k_scale / v_scale).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {
namespace {

// An element as the cache would hold it; the identity for f32 with scale 1.
float as_stored(float x, DType t, float scale, bool round) {
  return round ? round_through_scaled(x, t, scale) : x;
}

// Softmax attention of one query head over keys [0, n) of one kv head; writes the vd features of
// o and returns lse.
float attend(const VarlenAttnArgs& a, int32_t vd, const float* qh, const float* k0, const float* v0,
             int32_t n, std::vector<float>& p, float* o) {
  const int32_t hd = a.head_dim;
  const bool round = a.kv_dtype != DType::f32 || a.k_scale != 1.0f || a.v_scale != 1.0f;
  for (int32_t i = 0; i < vd; ++i) o[i] = 0.0f;
  if (n == 0) return -INFINITY;
  float m = -INFINITY;
  for (int32_t j = 0; j < n; ++j) {
    const float* kj = k0 + j * a.kv_row_stride;
    float dot = 0.0f;
    for (int32_t f = 0; f < hd; ++f) dot += qh[f] * as_stored(kj[f], a.kv_dtype, a.k_scale, round);
    p[j] = dot * a.scale;
    if (p[j] > m) m = p[j];  // NaN scores are not a max; they reach the output through p
  }
  float d = 0.0f;
  for (int32_t j = 0; j < n; ++j) {
    p[j] = (p[j] == -INFINITY) ? 0.0f : expf(p[j] - m);
    d += p[j];
  }
  for (int32_t j = 0; j < n; ++j) {
    const float* vj = v0 + j * a.kv_row_stride;
    for (int32_t f = 0; f < vd; ++f) o[f] += p[j] * as_stored(vj[f], a.kv_dtype, a.v_scale, round);
  }
  for (int32_t f = 0; f < vd; ++f) o[f] = (d != 0.0f) ? o[f] / d : o[f];
  return (d > 0.0f) ? m + logf(d) : (d == 0.0f ? -INFINITY : NAN);
}

}  // namespace

void varlen_attention(const VarlenAttnArgs& a) {
  const int32_t vd = a.v_dim == 0 ? a.head_dim : a.v_dim;
  if (vd < 0 || vd > a.head_dim)
    throw std::invalid_argument("varlen_attention: v_dim " + std::to_string(a.v_dim) +
                                " is neither 0 nor in [1, head_dim " + std::to_string(a.head_dim) +
                                "]");
  const int32_t group = a.num_q_heads / a.num_kv_heads;
  std::vector<float> p;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q0 = a.q_starts[s], q_len = a.q_starts[s + 1] - q0;
    const int32_t k0 = a.k_starts[s], k_len = a.k_starts[s + 1] - k0;
    p.resize(std::max<size_t>(p.size(), static_cast<size_t>(k_len)));
    for (int32_t j = 0; j < q_len; ++j) {
      const int64_t r = q0 + j;
      const int32_t n = a.causal ? std::min(j + 1, k_len) : k_len;
      for (int32_t h = 0; h < a.num_q_heads; ++h) {
        poll_point(static_cast<int64_t>(n) * (a.head_dim + vd));  // --max-seconds
        const int64_t kv_off = static_cast<int64_t>(k0) * a.kv_row_stride +
                               static_cast<int64_t>(h / group) * a.head_dim;
        a.lse[r * a.num_q_heads + h] = attend(
            a, vd, a.q + r * a.q_row_stride + static_cast<int64_t>(h) * a.head_dim, a.k + kv_off,
            a.v + kv_off, n, p, a.out + r * a.out_row_stride + static_cast<int64_t>(h) * vd);
      }
    }
  }
}

}  // namespace kv::host
