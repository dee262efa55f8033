// quant_fp8.cpp — host op: the batch-wide dynamic per-tensor fp8 (e4m3) quantise-dequantise
// of x into y.
//
// The amax runs over rows [0, amax_rows) — the real rows when amax_rows comes from the persistent
// buffer, every captured row when it is the fixed graph size (the seed-001 bug class): a NaN in a
// padded row then reaches every real row through the shared scale. amax propagates NaN like
// torch.amax; std::max would drop it.
#include <cmath>

#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {

void quant_fp8(const QuantFp8Args& a) {
  const int32_t amax_rows = a.amax_rows ? *a.amax_rows : a.amax_rows_fixed;
  float amax = 0.0f;
  for (int32_t r = 0; r < amax_rows; ++r) {
    const float* x = a.x + r * a.row_stride;
    for (int32_t c = 0; c < a.cols; ++c) {
      const float v = fabsf(x[c]);
      if (v != v || v > amax) amax = v;  // once NaN, stays NaN: NaN > anything is false
      if (amax != amax) break;
    }
    if (amax != amax) break;
  }
  const float scale = amax / 448.0f;
  if (a.scale_out) *a.scale_out = scale;
  for (int32_t r = 0; r < a.num_rows; ++r) {
    poll_point(a.cols);  // --max-seconds
    const float* x = a.x + r * a.row_stride;
    float* y = a.y + r * a.row_stride;  // may equal x: each element is read before it is written
    if (amax == 0.0f) {
      for (int32_t c = 0; c < a.cols; ++c) y[c] = x[c];
      continue;
    }
    for (int32_t c = 0; c < a.cols; ++c)
      y[c] = round_through_scaled(x[c], DType::fp8_e4m3, scale);
  }
}

}  // namespace kv::host
