// launch.cuh — what the CUDA kernel files share: grid sizing for grid-stride loops and warp/block
// reductions. Included by the .cu files of kernels/cuda only (nvcc).
//
// Why grid-stride loops everywhere: many counts live in device memory (q_starts, ctx_lens,
// *amax_rows) and a launcher must not read them (that would need a host sync, illegal while a
// graph is captured, and a replay must see the values of replay time). So grids are sized from
// host-side bounds and every kernel loops over whatever the device-side count turns out to be.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/device_attributes.h"

namespace kv::cuda {

inline constexpr int kThreads = 256;  // default block size: 8 warps

// Multiprocessors to size grid-stride grids by: the current device's (device_attributes.h), or 32
// when it cannot be read.
inline int grid_sms() {
  const int n = sm_count();
  return n > 0 ? n : 32;
}

// Blocks for a grid-stride loop over n items: enough to fill the chip a few times over, never 0
// (a zero-sized grid is a launch error; callers return early when there is no work at all).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t want = (n + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(grid_sms()) * 16;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(want, cap)));
}

// Grid-stride index helpers (64-bit: a cache layer can exceed 2^31 elements).
__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide sum; every thread gets the result. blockDim.x must be a multiple of 32, and every
// thread of the block must call it (it synchronises). `scratch` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

}  // namespace kv::cuda
