// merge_states.cpp — host op: merge_attn_states of chunked prefill.
//
// Rows [0, num_merge) combine state a (attention over the cached context) with state b (causal
// attention over the new tokens) by their lse; rows [num_merge, num_rows) have no context and copy
// b. The weighted sum always runs, so a NaN in either input (an unwritten context output, say)
// reaches the output; two empty states give weights 0 and 0, output 0 and lse -inf.
#include "kernels/attn_state.cuh"
#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {

void merge_states(const MergeStatesArgs& a) {
  const int32_t hd = a.head_dim;
  for (int32_t r = 0; r < a.num_rows; ++r) {
    poll_point(static_cast<int64_t>(a.num_heads) * hd);  // --max-seconds
    const float* oa = a.out_a + r * a.row_stride;
    const float* ob = a.out_b + r * a.row_stride;
    float* o = a.out + r * a.row_stride;
    for (int32_t h = 0; h < a.num_heads; ++h) {
      const int64_t li = static_cast<int64_t>(r) * a.num_heads + h;
      const int64_t f0 = static_cast<int64_t>(h) * hd;
      if (r >= a.num_merge) {
        for (int32_t i = 0; i < hd; ++i) o[f0 + i] = ob[f0 + i];
        if (a.lse) a.lse[li] = a.lse_b[li];
        continue;
      }
      const MergeWeights w = merge_weights(a.lse_a[li], a.lse_b[li]);
      for (int32_t i = 0; i < hd; ++i) o[f0 + i] = w.wa * oa[f0 + i] + w.wb * ob[f0 + i];
      if (a.lse) a.lse[li] = w.lse;
    }
  }
}

}  // namespace kv::host
