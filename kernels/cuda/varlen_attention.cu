// varlen_attention.cu — CUDA op: attention of query rows over contiguous float K/V per sequence
// (the context part and the new-token part of a chunked prefill), causal or not, GQA, v_dim.
//
// Reference: kernels/host/varlen_attention.cpp (an exact two-pass softmax). Here one CTA of 4 warps
// handles one (query row, q head) at a time with the online softmax of attn_state.cuh over tiles of
// 32 keys: each warp scores keys (lanes split the features, a shuffle sums them), every thread
// then folds the tile into the running state (m, d) — all threads hold the same state — and
// accumulates the v_dim output features it owns. The result equals the host's up to float
// rounding (a different summation order; exp of score - running max instead of - final max).
// NaN behaves as on the host: a NaN score is never a max but enters p, d and the output; a row
// with no keys gets output 0 and lse -inf; lse is the natural log. With kv_dtype / k_scale /
// v_scale other than f32 / 1 / 1, every K and V element is read as the cache would store it
// (round_through_scaled of dtype.cuh: the host's exact rounding), as the host does.
//
// Grid: x = q head, y = sequence, z = a slice of the sequence's query rows (grid-stride: the row
// counts live in device memory). Dynamic shared memory holds q (head_dim floats) and the output
// accumulator (v_dim floats); a head_dim the device cannot hold is a launch error, reported by
// the caller's launch check.
#include <stdexcept>
#include <string>

#include "kernels/attn_state.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kAttnThreads = kWarps * 32;
constexpr int kTile = 32;  // keys per tile

// An element as the cache would hold it (the new tokens of a prefill attend in cache precision).
__device__ __forceinline__ float as_stored(float x, DType t, float scale, bool round) {
  return round ? round_through_scaled(x, t, scale) : x;
}

__global__ void __launch_bounds__(kAttnThreads)
    varlen_kernel(VarlenAttnArgs a, int32_t vd, bool round) {
  extern __shared__ float smem[];
  float* qs = smem;               // [head_dim]
  float* acc = smem + a.head_dim;  // [vd]
  __shared__ float p[kTile];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int32_t hd = a.head_dim;
  const int32_t h = blockIdx.x;
  const int32_t kvh = h / (a.num_q_heads / a.num_kv_heads);
  for (int32_t s = blockIdx.y; s < a.num_seqs; s += gridDim.y) {
    const int32_t q0 = a.q_starts[s], q_len = a.q_starts[s + 1] - q0;
    const int32_t k0 = a.k_starts[s], k_len = a.k_starts[s + 1] - k0;
    const float* kbase = a.k + static_cast<int64_t>(k0) * a.kv_row_stride +
                         static_cast<int64_t>(kvh) * hd;
    const float* vbase = a.v + static_cast<int64_t>(k0) * a.kv_row_stride +
                         static_cast<int64_t>(kvh) * hd;
    for (int32_t j = blockIdx.z; j < q_len; j += gridDim.z) {
      const int64_t r = static_cast<int64_t>(q0) + j;
      const int32_t n = a.causal ? min(j + 1, k_len) : k_len;
      const float* q = a.q + r * a.q_row_stride + static_cast<int64_t>(h) * hd;
      __syncthreads();  // the previous row is done with qs, acc and p
      for (int32_t f = tid; f < hd; f += kAttnThreads) qs[f] = q[f];
      for (int32_t f = tid; f < vd; f += kAttnThreads) acc[f] = 0.0f;
      SoftmaxState st;  // identical in every thread
      __syncthreads();
      for (int32_t t0 = 0; t0 < n; t0 += kTile) {
        const int32_t tn = min(kTile, n - t0);
        for (int e = warp; e < kTile; e += kWarps) {
          float score = -INFINITY;
          if (e < tn) {
            const float* kr = kbase + static_cast<int64_t>(t0 + e) * a.kv_row_stride;
            float dot = 0.0f;
            for (int32_t f = lane; f < hd; f += 32)
              dot += qs[f] * as_stored(kr[f], a.kv_dtype, a.k_scale, round);
            score = warp_sum(dot) * a.scale;
          }
          if (lane == 0) p[e] = score;
        }
        __syncthreads();
        float tile_max = -INFINITY;
        for (int e = 0; e < tn; ++e)
          if (p[e] > tile_max) tile_max = p[e];  // NaN is not a max; it enters through p
        const float factor = softmax_rescale(st, tile_max);
        __syncthreads();  // everyone has read the raw scores
        if (tid < kTile) {
          const float x = p[tid];
          p[tid] = (tid >= tn || x == -INFINITY) ? 0.0f : expf(x - st.m);
        }
        __syncthreads();
        for (int e = 0; e < tn; ++e) st.d += p[e];
        for (int32_t f = tid; f < vd; f += kAttnThreads) {
          float o = acc[f] * factor;
          for (int e = 0; e < tn; ++e)
            o += p[e] * as_stored(vbase[static_cast<int64_t>(t0 + e) * a.kv_row_stride + f],
                                  a.kv_dtype, a.v_scale, round);
          acc[f] = o;
        }
        __syncthreads();  // p is rewritten by the next tile
      }
      float* out = a.out + r * a.out_row_stride + static_cast<int64_t>(h) * vd;
      for (int32_t f = tid; f < vd; f += kAttnThreads)
        out[f] = (st.d != 0.0f) ? acc[f] / st.d : acc[f];
      if (tid == 0) a.lse[r * a.num_q_heads + h] = softmax_lse(st);
    }
  }
}

}  // namespace

void varlen_attention(const VarlenAttnArgs& a, cudaStream_t stream) {
  const int32_t vd = a.v_dim == 0 ? a.head_dim : a.v_dim;
  if (vd < 0 || vd > a.head_dim)
    throw std::invalid_argument("varlen_attention: v_dim " + std::to_string(a.v_dim) +
                                " is neither 0 nor in [1, head_dim " +
                                std::to_string(a.head_dim) + "]");
  if (a.num_seqs <= 0 || a.num_q_heads <= 0) return;
  if (a.num_kv_heads <= 0 || a.num_q_heads % a.num_kv_heads != 0)
    throw std::invalid_argument("varlen_attention: num_q_heads " + std::to_string(a.num_q_heads) +
                                " is not a multiple of num_kv_heads " +
                                std::to_string(a.num_kv_heads));
  const unsigned gy = static_cast<unsigned>(std::min<int32_t>(a.num_seqs, 65535));
  const int64_t ctas_wanted = static_cast<int64_t>(grid_sms()) * 8;
  const int64_t per_slice = static_cast<int64_t>(a.num_q_heads) * gy;
  const unsigned gz =
      static_cast<unsigned>(std::clamp<int64_t>((ctas_wanted + per_slice - 1) / per_slice, 1, 1024));
  const size_t smem = (static_cast<size_t>(a.head_dim) + vd) * sizeof(float);
  // The host's condition, so that f32 with a scale other than 1 rounds through x / s * s too.
  const bool round = a.kv_dtype != DType::f32 || a.k_scale != 1.0f || a.v_scale != 1.0f;
  varlen_kernel<<<dim3(a.num_q_heads, gy, gz), kAttnThreads, smem, stream>>>(a, vd, round);
}

}  // namespace kv::cuda
