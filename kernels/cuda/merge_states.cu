// merge_states.cu — CUDA op: merge_attn_states of chunked prefill.
//
// Reference: kernels/host/merge_states.cpp. One thread per (row, head, feature): rows below
// num_merge combine state a (context) and state b (new tokens) with merge_weights of
// attn_state.cuh — the same function the host calls, so two empty states give 0 and -inf, never
// NaN, and a NaN in either input reaches the output; rows from num_merge on copy b. The thread of
// feature 0 also writes the merged lse (when lse is not null). Each thread reads its inputs before
// writing its own output element, so out may alias out_a or out_b. The weighted sum may be fused
// into an FMA here: equal to the host within one rounding.
#include "kernels/attn_state.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

__global__ void merge_states_kernel(MergeStatesArgs a) {
  const int64_t hd = a.head_dim;
  const int64_t n = static_cast<int64_t>(a.num_rows) * a.num_heads * hd;
  for (int64_t e = global_thread(); e < n; e += global_stride()) {
    const int64_t rh = e / hd, i = e % hd;  // rh = row * num_heads + head: the lse index
    const int64_t r = rh / a.num_heads, h = rh % a.num_heads;
    const int64_t idx = r * a.row_stride + h * hd + i;
    if (r >= a.num_merge) {
      a.out[idx] = a.out_b[idx];
      if (a.lse && i == 0) a.lse[rh] = a.lse_b[rh];
      continue;
    }
    const MergeWeights w = merge_weights(a.lse_a[rh], a.lse_b[rh]);
    a.out[idx] = w.wa * a.out_a[idx] + w.wb * a.out_b[idx];
    if (a.lse && i == 0) a.lse[rh] = w.lse;
  }
}

}  // namespace

void merge_states(const MergeStatesArgs& a, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(a.num_rows) * a.num_heads * a.head_dim;
  if (n <= 0) return;
  merge_states_kernel<<<grid_for(n), kThreads, 0, stream>>>(a);
}

}  // namespace kv::cuda
