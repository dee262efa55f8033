// decode_merge.cu — CUDA paged decode, split merge: combines the per-split states that a decode
// path left in the workspace (partial_out, partial_lse) into `out`, for rows with 2 or more
// splits. Every path (generic, gqa_tc, mla_tc) is followed by this one kernel.
//
// Two kernels with the same weights. v2 (used whenever it applies) gives a CTA to each (row, q
// head, slice of 128 features), spreads it over 8 split groups x 32 float4 lanes, and puts the
// loads of up to 32 splits, and every lse load, in flight before anything waits (small batches are
// latency-bound here). v1, the simple one (CTA = (row, q head), 128 threads, one feature per
// thread), runs only when v2 cannot: v_dim % 4 != 0, out_row_stride % 4 != 0, or out /
// partial_out not 16-byte aligned.
//
// A row with exactly one split was written straight to `out` by the decode kernel (StateSink in
// decode_device.cuh), so the merge skips it, and is not launched at all when max_splits is 1.
// Reference: merge_weights (kernels/attn_state.cuh) folded left as kernels/host/paged_decode.cpp
// does. Built into kv_cuda_kernels by the top-level CMakeLists (glob of kernels/cuda/*.cu);
// alone:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. -c kernels/cuda/decode_merge.cu
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/decode_device.cuh"
#include "kernels/cuda/decode_launch.h"
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

// Warp 0 of the CTA: the closed-form weights of the ns split lse values in `lse_sm` (shared),
// written to `wsm` (may alias lse_sm). Empty states (-inf) weigh 0; a NaN lse makes every weight
// NaN; all-empty gives 0 weights.
__device__ __forceinline__ void split_weights(const float* lse_sm, float* wsm, int ns) {
  float m = -INFINITY;
  bool nan = false;
  for (int s = threadIdx.x; s < ns; s += 32) {
    const float l = lse_sm[s];
    nan |= l != l;
    m = fmaxf(m, l);
  }
  nan = __any_sync(0xffffffffu, nan);
  m = warp_max_ignore_nan(m, 32);
  float sum = 0.0f;
  for (int s = threadIdx.x; s < ns; s += 32) {
    const float l = lse_sm[s];
    const float e = (l == -INFINITY) ? 0.0f : expf(l - m);
    wsm[s] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  for (int s = threadIdx.x; s < ns; s += 32)
    wsm[s] = nan ? NAN : (sum > 0.0f ? wsm[s] / sum : 0.0f);
}

constexpr int kMergeThreads = 128;

// The merge is launched as a programmatic dependent of the decode kernel (sm_90: launch_dependent
// in decode_launch.h), so that its CTAs are scheduled while the decode grid drains; the partial
// states may be read only after wait_for_prior_grids. It allows the next grid (the next decode)
// the same at its start.

__global__ void __launch_bounds__(kMergeThreads) decode_merge_kernel(const PagedDecodeArgs a,
                                                                      int vd) {
  extern __shared__ float wsm[];  // [max_splits] weights
  const int H = a.num_q_heads;
  const int h = blockIdx.x % H, row = blockIdx.x / H;
  if (a.seq_lens[row] <= 0) return;
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  if (ns < 2 || ns > a.max_splits || chunk <= 0) return;  // the decode kernel wrote these rows
  allow_dependent_launch();
  wait_for_prior_grids();

  const int64_t base = partial_index(a, row, 0, h);  // split s is at base + s * H
  if (threadIdx.x < 32) {
    for (int s = threadIdx.x; s < ns; s += 32)
      wsm[s] = a.partial_lse[base + static_cast<int64_t>(s) * H];
    __syncwarp();
    split_weights(wsm, wsm, ns);
  }
  __syncthreads();
  float* out = a.out + row * a.out_row_stride + static_cast<int64_t>(h) * vd;
  for (int i = threadIdx.x; i < vd; i += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < ns; ++s) o += wsm[s] * a.partial_out[(base + static_cast<int64_t>(s) * H) * vd + i];
    out[i] = o;
  }
}

// v2 (used wherever it applies; v1 above is the fallback): the same weights, built for latency.
// CTA = (row, q head, slice of 32 float4 features), 256 threads = 8 split groups (one warp each)
// x 32 float4 lanes. Every thread issues the loads of its first kV2Batch splits (s = group + 8 k)
// and every lse load before anything waits, so that a merge of up to 32 splits costs one L2
// round trip; warp 0 then turns the lse into weights in shared memory, each thread accumulates its
// splits, and the 8 groups are summed in shared memory in group order. Needs v_dim % 4 == 0 and
// 16-byte aligned out / partial_out rows (the launcher falls back to v1 otherwise).
constexpr int kV2Groups = 8, kV2Lanes = 32, kV2Threads = kV2Groups * kV2Lanes, kV2Batch = 4;

__global__ void __launch_bounds__(kV2Threads) decode_merge_v2_kernel(const PagedDecodeArgs a,
                                                                      int vd, int slices) {
  // [max_splits] lse, then weights in place; then [8][32] float4 group sums
  extern __shared__ __align__(16) float msm[];
  float4* red = reinterpret_cast<float4*>(msm + ((a.max_splits + 3) & ~3));
  const int H = a.num_q_heads;
  int idx = blockIdx.x;
  const int slice = idx % slices;
  idx /= slices;
  const int h = idx % H, row = idx / H;
  if (a.seq_lens[row] <= 0) return;
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  if (ns < 2 || ns > a.max_splits || chunk <= 0) return;  // the decode kernel wrote these rows
  allow_dependent_launch();
  wait_for_prior_grids();

  const int grp = threadIdx.x / kV2Lanes, lane = threadIdx.x % kV2Lanes;
  const int q4 = slice * kV2Lanes + lane;  // float4 index within the head's vd features
  const bool live = q4 * 4 < vd;
  const int64_t base = partial_index(a, row, 0, h);  // split s is at base + s * H
  const float4* po = reinterpret_cast<const float4*>(a.partial_out);
  auto at = [&](int s) { return ((base + static_cast<int64_t>(s) * H) * vd) / 4 + q4; };

  float4 pre[kV2Batch];
#pragma unroll
  for (int k = 0; k < kV2Batch; ++k) {
    const int s = grp + kV2Groups * k;
    pre[k] = (live && s < ns) ? po[at(s)] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  for (int s = threadIdx.x; s < ns; s += kV2Threads)
    msm[s] = a.partial_lse[base + static_cast<int64_t>(s) * H];
  __syncthreads();
  if (threadIdx.x < 32) split_weights(msm, msm, ns);
  __syncthreads();

  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  auto add = [&](float w, const float4& p) {
    acc.x += w * p.x;
    acc.y += w * p.y;
    acc.z += w * p.z;
    acc.w += w * p.w;
  };
#pragma unroll
  for (int k = 0; k < kV2Batch; ++k) {
    const int s = grp + kV2Groups * k;
    if (s < ns) add(msm[s], pre[k]);
  }
  for (int s0 = grp + kV2Groups * kV2Batch; s0 < ns; s0 += kV2Groups * kV2Batch) {
    float4 p[kV2Batch];
#pragma unroll
    for (int k = 0; k < kV2Batch; ++k) {
      const int s = s0 + kV2Groups * k;
      p[k] = (live && s < ns) ? po[at(s)] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < kV2Batch; ++k) {
      const int s = s0 + kV2Groups * k;
      if (s < ns) add(msm[s], p[k]);
    }
  }
  red[grp * kV2Lanes + lane] = acc;
  __syncthreads();
  if (grp == 0 && live) {
    float4 o = red[lane];
#pragma unroll
    for (int g = 1; g < kV2Groups; ++g) {
      const float4 r = red[g * kV2Lanes + lane];
      o.x += r.x;
      o.y += r.y;
      o.z += r.z;
      o.w += r.w;
    }
    float* out = a.out + row * a.out_row_stride + static_cast<int64_t>(h) * vd;
    reinterpret_cast<float4*>(out)[q4] = o;
  }
}

}  // namespace

// =================================================================================================
// Launcher
// =================================================================================================

void launch_merge(const PagedDecodeArgs& a, cudaStream_t stream) {
  if (a.max_splits < 2) return;  // every row was written directly (or is padded)
  const int vd = v_dim_of(a);
  const bool v2 = vd % 4 == 0 && a.out_row_stride % 4 == 0 && aligned16(a.out) &&
                  aligned16(a.partial_out);
  if (v2) {
    const int slices = (vd / 4 + kV2Lanes - 1) / kV2Lanes;
    const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.num_q_heads * slices;
    const int smem = ((a.max_splits + 3) & ~3) * static_cast<int>(sizeof(float)) +
                     kV2Threads * static_cast<int>(sizeof(float4));
    if (ctas > 0x7fffffff) throw std::invalid_argument("cuda paged_decode: merge grid too large");
    if (smem > smem_optin())
      throw std::invalid_argument("cuda paged_decode: max_splits too large for the merge kernel");
    allow_smem<decode_merge_v2_kernel>(smem);
    launch_dependent(decode_merge_v2_kernel, static_cast<unsigned>(ctas), kV2Threads, smem, stream,
                     a, vd, slices);
    check_launch("decode_merge_v2_kernel");
    return;
  }
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.num_q_heads;
  // Rounded up to whole float4s: nvcc unrolls the weight loop with vector shared loads that may
  // read up to 3 floats past ns (unused), which compute-sanitizer memcheck flags when the
  // allocation ends exactly at max_splits.
  const int smem = ((a.max_splits + 3) & ~3) * static_cast<int>(sizeof(float));
  if (smem > smem_optin())
    throw std::invalid_argument("cuda paged_decode: max_splits too large for the merge kernel");
  allow_smem<decode_merge_kernel>(smem);
  launch_dependent(decode_merge_kernel, static_cast<unsigned>(ctas), kMergeThreads, smem, stream,
                   a, vd);
  check_launch("decode_merge_kernel");
}

}  // namespace kv::cuda::decode_detail
