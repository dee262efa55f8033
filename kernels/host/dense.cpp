// dense.cpp — host ops of the synthetic model: embed, rms_norm, linear, argmax.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"
#include "kernels/model_math.cuh"

namespace kv::host {

void embed(const EmbedArgs& a) {
  for (int32_t r = 0; r < a.num_rows; ++r) {
    const int32_t tok = a.tokens[r], pos = a.positions[r];
    float* out = a.out + static_cast<int64_t>(r) * a.hidden;
    // A token outside the table (a poisoned padded row) would be an out-of-bounds read on a GPU;
    // the host writes NaN instead, so the garbage is deterministic and visible to the checks.
    if (tok < 0 || tok >= a.vocab) {
      for (int32_t i = 0; i < a.hidden; ++i) out[i] = NAN;
      continue;
    }
    const float* row = a.table + static_cast<int64_t>(tok) * a.hidden;
    for (int32_t i = 0; i < a.hidden; ++i) out[i] = row[i] + position_code<float>(pos, i, a.hidden);
  }
}

void rms_norm(const RmsNormArgs& a) {
  for (int32_t r = 0; r < a.num_rows; ++r) {
    const float* x = a.x + static_cast<int64_t>(r) * a.cols;
    float* out = a.out + static_cast<int64_t>(r) * a.cols;
    float ss = 0.0f;
    for (int32_t c = 0; c < a.cols; ++c) ss += x[c] * x[c];
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(a.cols) + a.eps);
    for (int32_t c = 0; c < a.cols; ++c) out[c] = x[c] * inv;  // x may alias out: read first
  }
}

// x and out must not overlap (every output reads the whole input row). Group g is an independent
// linear with its own weights, reading x at g * x_group_stride and writing out at g * out_dim.
void linear(const LinearArgs& a) {
  if (a.groups < 1 || a.x_group_stride < 0)
    throw std::invalid_argument("linear: groups " + std::to_string(a.groups) +
                                " must be >= 1 and x_group_stride " +
                                std::to_string(a.x_group_stride) + " >= 0");
  const int64_t x_group_stride = a.x_group_stride == 0 ? a.in_dim : a.x_group_stride;
  const int64_t w_group_stride = static_cast<int64_t>(a.out_dim) * a.in_dim;
  for (int32_t r = 0; r < a.num_rows; ++r) {
    poll_point(static_cast<int64_t>(a.groups) * w_group_stride);  // --max-seconds
    for (int32_t g = 0; g < a.groups; ++g) {
      const float* x = a.x + r * a.x_row_stride + g * x_group_stride;
      const float* wg = a.w + g * w_group_stride;
      const float* bias = a.bias ? a.bias + static_cast<int64_t>(g) * a.out_dim : nullptr;
      float* out = a.out + r * a.out_row_stride + static_cast<int64_t>(g) * a.out_dim;
      for (int32_t o = 0; o < a.out_dim; ++o) {
        const float* w = wg + static_cast<int64_t>(o) * a.in_dim;
        float acc = 0.0f;
        for (int32_t i = 0; i < a.in_dim; ++i) acc += w[i] * x[i];
        if (bias) acc += bias[o];
        out[o] = a.accumulate ? out[o] + acc : acc;
      }
    }
  }
}

void argmax(const ArgmaxArgs& a) {
  for (int32_t r = 0; r < a.num_rows; ++r) {
    const float* l = a.logits + static_cast<int64_t>(r) * a.vocab;
    int32_t best = a.vocab > 0 ? 0 : -1;
    for (int32_t i = 0; i < a.vocab; ++i) {
      if (l[i] != l[i]) {
        best = -1;
        break;
      }
      if (l[i] > l[best]) best = i;  // strict: the lowest index wins ties
    }
    a.tokens[r] = best;
  }
}

}  // namespace kv::host
