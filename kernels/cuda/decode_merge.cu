// decode_merge.cu — CUDA paged decode, split merge: combines the per-split states that a decode
// path left in the workspace (partial_out, partial_lse) into `out`, for rows with 2 or more
// splits. Every path (generic, gqa_tc, mla_tc) is followed by this one kernel.
//
// A row with exactly one split was written straight to `out` by the decode kernel (StateSink in
// decode_common.cuh), so the merge skips it, and is not launched at all when max_splits is 1.
// Reference: merge_weights (kernels/attn_state.cuh) folded left as kernels/host/paged_decode.cpp
// does. Built into kv_cuda by the top-level CMakeLists (glob of kernels/cuda/*.cu); alone:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. -Isrc -c kernels/cuda/decode_merge.cu
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/decode_common.cuh"
#include "kernels/cuda/decode_launchers.h"

namespace kv::cuda::decode_detail {
namespace {

// =================================================================================================
// GPU kernel
// =================================================================================================
//
// CTA = (row, q head), 128 threads. Warp 0 turns the split lse into weights in closed form,
// w_s = exp(lse_s - M) / sum_t exp(lse_t - M): the same function as the host's left fold of
// merge_weights (empty states weigh 0, a NaN lse makes every weight NaN), one rounding apart.

constexpr int kMergeThreads = 128;

__global__ void __launch_bounds__(kMergeThreads) decode_merge_kernel(const PagedDecodeArgs a,
                                                                      int vd) {
  extern __shared__ float wsm[];  // [max_splits] weights
  const int H = a.num_q_heads;
  const int h = blockIdx.x % H, row = blockIdx.x / H;
  if (a.seq_lens[row] <= 0) return;
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  if (ns < 2 || ns > a.max_splits || chunk <= 0) return;  // the decode kernel wrote these rows

  const int64_t base = partial_index(a, row, 0, h);  // split s is at base + s * H
  if (threadIdx.x < 32) {
    float m = -INFINITY;
    bool nan = false;
    for (int s = threadIdx.x; s < ns; s += 32) {
      const float l = a.partial_lse[base + static_cast<int64_t>(s) * H];
      nan |= l != l;
      m = fmaxf(m, l);
    }
    nan = __any_sync(0xffffffffu, nan);
    m = warp_max_ignore_nan(m, 32);
    float sum = 0.0f;
    for (int s = threadIdx.x; s < ns; s += 32) {
      const float l = a.partial_lse[base + static_cast<int64_t>(s) * H];
      const float e = (l == -INFINITY) ? 0.0f : expf(l - m);
      wsm[s] = e;
      sum += e;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    for (int s = threadIdx.x; s < ns; s += 32)
      wsm[s] = nan ? NAN : (sum > 0.0f ? wsm[s] / sum : 0.0f);
  }
  __syncthreads();
  float* out = a.out + row * a.out_row_stride + static_cast<int64_t>(h) * vd;
  for (int i = threadIdx.x; i < vd; i += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < ns; ++s) o += wsm[s] * a.partial_out[(base + static_cast<int64_t>(s) * H) * vd + i];
    out[i] = o;
  }
}

}  // namespace

// =================================================================================================
// Launcher
// =================================================================================================

void launch_merge(const PagedDecodeArgs& a, cudaStream_t stream) {
  if (a.max_splits < 2) return;  // every row was written directly (or is padded)
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.num_q_heads;
  const int smem = a.max_splits * static_cast<int>(sizeof(float));
  if (smem > device_smem_optin())
    throw std::invalid_argument("cuda paged_decode: max_splits too large for the merge kernel");
  allow_smem<decode_merge_kernel>(smem);
  decode_merge_kernel<<<static_cast<unsigned>(ctas), kMergeThreads, smem, stream>>>(a, v_dim_of(a));
  check_launch("decode_merge_kernel");
}

}  // namespace kv::cuda::decode_detail
