// quant_fp8.cu — CUDA op: the batch-wide dynamic per-tensor fp8 (e4m3) quantise-dequantise.
//
// Reference: kernels/host/quant_fp8.cpp. Two kernels on the stream:
//   1. amax_partial: kAmaxBlocks CTAs reduce |x| over rows [0, amax_rows) — amax_rows read from
//      device memory when given (the persistent buffer a graph replay sees), else the fixed count —
//      into one partial per CTA. atomicMax on floats would drop NaN; the reduction here is explicit
//      and NaN-sticky (amax_combine), as torch.amax and the host are.
//   2. quantise: every CTA folds the partials into amax (max is order independent, so every CTA
//      and the host get the same bits), scale = amax / 448, and quantise-dequantises its share of
//      rows [0, num_rows): y = fp8(x / scale) * scale, or y = x when amax is 0. CTA 0 writes
//      scale_out. x / scale and the conversions are IEEE-exact (no fast math), so y equals the
//      host's bit for bit. y may equal x: kernel 2 starts after kernel 1 has read everything.
// The partials live in a __device__ array: a fixed address, so graphs capture it like any buffer.
// Two quant_fp8 running concurrently on different streams would share it; CudaDevice has one.
#include <cstdint>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

constexpr int kAmaxBlocks = 128;
__device__ float g_amax_partials[kAmaxBlocks];

// max of two |x| values where a NaN wins and stays.
__device__ __forceinline__ float amax_combine(float a, float b) {
  if (a != a) return a;
  return (b != b || b > a) ? b : a;
}

__device__ float block_amax(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = amax_combine(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v = amax_combine(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void amax_partial_kernel(QuantFp8Args a) {
  __shared__ float scratch[32];
  const int64_t rows = a.amax_rows ? *a.amax_rows : a.amax_rows_fixed;
  const int64_t n = rows > 0 ? rows * a.cols : 0;
  float m = 0.0f;
  for (int64_t e = global_thread(); e < n; e += global_stride()) {
    const int64_t r = e / a.cols, c = e % a.cols;
    m = amax_combine(m, fabsf(a.x[r * a.row_stride + c]));
  }
  m = block_amax(m, scratch);
  if (threadIdx.x == 0) g_amax_partials[blockIdx.x] = m;
}

__global__ void quantise_kernel(QuantFp8Args a) {
  __shared__ float scratch[32];
  float m = threadIdx.x < kAmaxBlocks ? g_amax_partials[threadIdx.x] : 0.0f;
  const float amax = block_amax(m, scratch);
  const float scale = amax / 448.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0 && a.scale_out) *a.scale_out = scale;
  const int64_t n = static_cast<int64_t>(a.num_rows) * a.cols;
  for (int64_t e = global_thread(); e < n; e += global_stride()) {
    const int64_t r = e / a.cols, c = e % a.cols;
    const int64_t idx = r * a.row_stride + c;
    const float x = a.x[idx];
    a.y[idx] = (amax == 0.0f) ? x : round_through_scaled(x, DType::fp8_e4m3, scale);
  }
}

}  // namespace

void quant_fp8(const QuantFp8Args& a, cudaStream_t stream) {
  // Kernel 2 reads all kAmaxBlocks partials (0 from a CTA that found no rows).
  // Both are cheap and always launched, so scale_out is written even with no rows (0 / 448).
  static_assert(kAmaxBlocks <= kThreads && kAmaxBlocks % 32 == 0);
  amax_partial_kernel<<<kAmaxBlocks, kThreads, 0, stream>>>(a);
  const int64_t n = static_cast<int64_t>(a.num_rows) * std::max(a.cols, 0);
  quantise_kernel<<<grid_for(std::max<int64_t>(n, 1)), kThreads, 0, stream>>>(a);
}

}  // namespace kv::cuda
