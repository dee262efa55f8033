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

// Rows [0, rows) of K or V as the cache stores them: each row's num_kv_heads * head_dim elements
// rounded once (every query row and head of the sequence reads them), packed at that width.
void round_rows(const float* src, int32_t rows, const VarlenAttnArgs& a, float scale,
                std::vector<float>& dst) {
  const int64_t width = static_cast<int64_t>(a.num_kv_heads) * a.head_dim;
  dst.resize(static_cast<size_t>(rows * width));
  for (int64_t j = 0; j < rows; ++j) {
    poll_point(width);  // --max-seconds
    for (int64_t e = 0; e < width; ++e)
      dst[j * width + e] = round_through_scaled(src[j * a.kv_row_stride + e], a.kv_dtype, scale);
  }
}

// Softmax attention of one query head over keys [0, n) of one kv head, K and V rows `stride`
// apart; writes the vd features of o and returns lse.
float attend(const VarlenAttnArgs& a, int32_t vd, const float* qh, const float* k0, const float* v0,
             int64_t stride, int32_t n, std::vector<float>& p, float* o) {
  const int32_t hd = a.head_dim;
  for (int32_t i = 0; i < vd; ++i) o[i] = 0.0f;
  if (n == 0) return -INFINITY;
  float m = -INFINITY;
  for (int32_t j = 0; j < n; ++j) {
    const float* kj = k0 + j * stride;
    float dot = 0.0f;
    for (int32_t f = 0; f < hd; ++f) dot += qh[f] * kj[f];
    p[j] = dot * a.scale;
    if (p[j] > m) m = p[j];  // NaN scores are not a max; they reach the output through p
  }
  float d = 0.0f;
  for (int32_t j = 0; j < n; ++j) {
    p[j] = (p[j] == -INFINITY) ? 0.0f : expf(p[j] - m);
    d += p[j];
  }
  for (int32_t j = 0; j < n; ++j) {
    const float* vj = v0 + j * stride;
    for (int32_t f = 0; f < vd; ++f) o[f] += p[j] * vj[f];
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
  // The identity for f32 with scale 1; otherwise K and V are read as the cache would hold them.
  const bool round = a.kv_dtype != DType::f32 || a.k_scale != 1.0f || a.v_scale != 1.0f;
  std::vector<float> p, k_stored, v_stored;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q0 = a.q_starts[s], q_len = a.q_starts[s + 1] - q0;
    const int32_t k0 = a.k_starts[s], k_len = a.k_starts[s + 1] - k0;
    p.resize(std::max<size_t>(p.size(), static_cast<size_t>(k_len)));
    const float* k = a.k + static_cast<int64_t>(k0) * a.kv_row_stride;
    const float* v = a.v + static_cast<int64_t>(k0) * a.kv_row_stride;
    int64_t stride = a.kv_row_stride;
    if (round && q_len > 0) {
      round_rows(k, k_len, a, a.k_scale, k_stored);
      round_rows(v, k_len, a, a.v_scale, v_stored);
      k = k_stored.data();
      v = v_stored.data();
      stride = static_cast<int64_t>(a.num_kv_heads) * a.head_dim;
    }
    for (int32_t j = 0; j < q_len; ++j) {
      const int64_t r = q0 + j;
      const int32_t n = a.causal ? std::min(j + 1, k_len) : k_len;
      for (int32_t h = 0; h < a.num_q_heads; ++h) {
        poll_point(static_cast<int64_t>(n) * (a.head_dim + vd));  // --max-seconds
        const int64_t kv_off = static_cast<int64_t>(h / group) * a.head_dim;
        a.lse[r * a.num_q_heads + h] =
            attend(a, vd, a.q + r * a.q_row_stride + static_cast<int64_t>(h) * a.head_dim,
                   k + kv_off, v + kv_off, stride, n, p,
                   a.out + r * a.out_row_stride + static_cast<int64_t>(h) * vd);
      }
    }
  }
}

}  // namespace kv::host
