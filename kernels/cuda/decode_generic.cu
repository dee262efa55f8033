// decode_generic.cu — CUDA paged decode, generic path: any dtype, head_dim and v_dim <= 1024, any
// block size, layout and GQA ratio. Float32 like the host op, written to be obviously right, not
// fast; it is the path every descriptor the tensor-core paths refuse gets, and the one
// KVCHECK_DECODE_PATH=generic forces for a whole run.
//
// Reference: kernels/host/paged_decode.cpp (the spec). Split plan, masking and NaN rules shared by
// every path: the header comment of kernels/cuda/paged_decode.cu. Built into kv_cuda_kernels by
// the top-level CMakeLists (glob of kernels/cuda/*.cu); alone:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. -c kernels/cuda/decode_generic.cu
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
// CTA = (row, split, q head), 128 threads. Per tile (= cache block): a warp per entry computes the
// score (lanes stride the features, warp sum), every thread then runs the same serial softmax
// bookkeeping as the host (identical copies of the state, no broadcast needed), and each thread
// owns v_dim / 128 output features for the P·V over every entry of the block.

constexpr int kGenericThreads = 128;
constexpr int kGenericMaxVdPerThread = 8;  // v_dim <= 1024
static_assert(kGenericThreads * kGenericMaxVdPerThread == kMaxHeadDim,
              "validate() (paged_decode.cu) refuses v_dim above what a CTA's accumulators hold");

__global__ void __launch_bounds__(kGenericThreads)
    decode_generic_kernel(const PagedDecodeArgs a, int vd) {
  allow_dependent_launch();
  wait_for_prior_grids();
  extern __shared__ float gsm[];  // q[head_dim] | scores / probabilities [block_size]
  const PagedKv& c = a.cache;
  const int H = a.num_q_heads, hd = c.head_dim, bs = c.block_size;
  const int group = H / c.num_kv_heads;
  int idx = blockIdx.x;
  const int h = idx % H;
  idx /= H;
  const int s = idx % a.max_splits, row = idx / a.max_splits;
  const int kvh = h / group;

  const Split sp = read_split(a, row, s);
  if (finish_without_attention(a, sp, row, s, h, 1, vd)) return;

  float* q_s = gsm;
  float* p_s = gsm + hd;
  const float* q = a.q + row * a.q_row_stride + static_cast<int64_t>(h) * hd;
  for (int f = threadIdx.x; f < hd; f += blockDim.x) q_s[f] = q[f];
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  const int32_t* table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
  float acc[kGenericMaxVdPerThread];
#pragma unroll
  for (int k = 0; k < kGenericMaxVdPerThread; ++k) acc[k] = 0.0f;
  SoftmaxState st;

  for (int64_t tile = sp.start / bs; tile <= (sp.end - 1) / bs; ++tile) {
    const int32_t block = table[tile];
    for (int e = warp; e < bs; e += nwarps) {
      const int64_t tok = tile * bs + e;
      const bool valid = tok >= sp.start && tok < sp.end;
      float dot = 0.0f;
      if (valid)  // K of a masked entry is never read: its NaN must not matter
        for (int f = lane; f < hd; f += 32) dot += q_s[f] * load_k(c, block, e, kvh, f);
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (lane == 0) p_s[e] = valid ? dot * a.scale : -INFINITY;
    }
    __syncthreads();
    float tile_max = -INFINITY;
    for (int e = 0; e < bs; ++e)
      if (p_s[e] > tile_max) tile_max = p_s[e];  // a NaN score is not a max, as on the host
    const float f = softmax_rescale(st, tile_max);
    __syncthreads();  // every thread has read the scores
    for (int e = threadIdx.x; e < bs; e += blockDim.x)
      p_s[e] = (p_s[e] == -INFINITY) ? 0.0f : expf(p_s[e] - st.m);
    __syncthreads();
    for (int e = 0; e < bs; ++e) st.d += p_s[e];  // the host's order, in every thread
#pragma unroll
    for (int k = 0; k < kGenericMaxVdPerThread; ++k) {
      const int i = threadIdx.x + k * kGenericThreads;
      if (i < vd) {
        float v = acc[k] * f;
        for (int e = 0; e < bs; ++e) v += p_s[e] * load_v(c, block, e, kvh, i);  // the whole tile
        acc[k] = v;
      }
    }
    __syncthreads();  // p_s is rewritten by the next tile
  }

  const float lse = softmax_lse(st);
  const StateSink k = state_sink(a, row, s, sp.num_splits, h, vd, lse);
#pragma unroll
  for (int j = 0; j < kGenericMaxVdPerThread; ++j) {
    const int i = threadIdx.x + j * kGenericThreads;
    if (i < vd) k.put(i, st.d != 0.0f ? acc[j] / st.d : acc[j]);
  }
  if (threadIdx.x == 0) k.put_lse(lse);
}

}  // namespace

// =================================================================================================
// Launcher
// =================================================================================================

void launch_generic(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int vd = v_dim_of(a);
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.max_splits * a.num_q_heads;
  const int smem = (a.cache.head_dim + a.cache.block_size) * static_cast<int>(sizeof(float));
  if (smem > smem_optin())
    throw std::invalid_argument("cuda paged_decode: head_dim + block_size too large for the generic path");
  allow_smem<decode_generic_kernel>(smem);
  launch_dependent(decode_generic_kernel, static_cast<unsigned>(ctas), kGenericThreads, smem,
                   stream, a, vd);
  check_launch("decode_generic_kernel");
}

}  // namespace kv::cuda::decode_detail
