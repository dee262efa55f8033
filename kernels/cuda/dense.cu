// dense.cu — CUDA ops of the synthetic model: embed, rms_norm, linear (plain and grouped), argmax.
//
// Reference: kernels/host/dense.cpp. These are the small dense steps around attention, not what
// kvcheck measures, so the kernels are plain: elementwise for embed, one CTA per row with a block
// reduction for rms_norm and argmax, and a 32x32 shared-memory tiled fp32 kernel for linear. Sums
// are float, in tree (rms_norm) or FMA (linear) order, so values agree with the host within float
// rounding; embed's position code rounds double-precision sin/cos/pow to float (see there);
// argmax is exact: ties go to the lowest index and a row holding a NaN gives -1, as on the host.
#include <climits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

// ---- embed ----

// position_code<float> of model_math.cuh, step by step the same float formula, but with each
// transcendental evaluated in double and rounded to float. Why: the host's glibc powf / sinf /
// cosf are within ~0.8 ulp (nearly always the correctly rounded value), CUDA's float pow is up to
// several ulp off, and at position 4096 one ulp of the frequency moves the angle by ~5e-4 rad —
// far more than the float formula's own error that the reference tolerance budgets for. Rounded
// double results are the correctly rounded floats, so the two devices agree but for rare ties.
__device__ float position_code_f32(int pos, int i, int hidden) {
  const int j = i / 2;
  const float e = static_cast<float>(-2 * j) / static_cast<float>(hidden);
  const float freq = static_cast<float>(pow(10000.0, static_cast<double>(e)));
  const float angle = static_cast<float>(pos) * freq;
  return (i % 2 == 0) ? static_cast<float>(sin(static_cast<double>(angle)))
                      : static_cast<float>(cos(static_cast<double>(angle)));
}

__global__ void embed_kernel(EmbedArgs a) {
  const int64_t n = static_cast<int64_t>(a.num_rows) * a.hidden;
  for (int64_t e = global_thread(); e < n; e += global_stride()) {
    const int64_t r = e / a.hidden;
    const int32_t i = static_cast<int32_t>(e % a.hidden);
    const int32_t tok = a.tokens[r];
    // A token outside the table (a poisoned padded row) would read out of bounds: NaN instead,
    // as the host writes, so the garbage is deterministic.
    a.out[e] = (tok < 0 || tok >= a.vocab)
                   ? NAN
                   : a.table[static_cast<int64_t>(tok) * a.hidden + i] +
                         position_code_f32(a.positions[r], i, a.hidden);
  }
}

// ---- rms_norm ----

__global__ void rms_norm_kernel(RmsNormArgs a) {
  __shared__ float scratch[32];
  for (int32_t r = blockIdx.x; r < a.num_rows; r += gridDim.x) {
    const float* x = a.x + static_cast<int64_t>(r) * a.cols;
    float* out = a.out + static_cast<int64_t>(r) * a.cols;
    float ss = 0.0f;
    for (int32_t c = threadIdx.x; c < a.cols; c += blockDim.x) ss += x[c] * x[c];
    ss = block_sum(ss, scratch);  // also the barrier after which out (which may be x) is written
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(a.cols) + a.eps);
    for (int32_t c = threadIdx.x; c < a.cols; c += blockDim.x) out[c] = x[c] * inv;
  }
}

// ---- linear ----

constexpr int kTile = 32;     // rows x outputs x inputs per step
constexpr int kTileRows = 8;  // thread rows: each thread computes kTile / kTileRows outputs

__global__ void __launch_bounds__(kTile* kTileRows) linear_kernel(LinearArgs a, int64_t x_gs) {
  __shared__ float xs[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  __shared__ float ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTile + tx;
  const int64_t g = blockIdx.z;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t out0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const float* x = a.x + g * x_gs;
  const float* w = a.w + g * static_cast<int64_t>(a.out_dim) * a.in_dim;
  float acc[kTile / kTileRows] = {};
  for (int32_t k0 = 0; k0 < a.in_dim; k0 += kTile) {
    for (int idx = tid; idx < kTile * kTile; idx += kTile * kTileRows) {
      const int i = idx / kTile, kk = idx % kTile;
      const int64_t k = k0 + kk;
      const bool kin = k < a.in_dim;
      xs[i][kk] = (kin && row0 + i < a.num_rows) ? x[(row0 + i) * a.x_row_stride + k] : 0.0f;
      ws[i][kk] = (kin && out0 + i < a.out_dim) ? w[(out0 + i) * a.in_dim + k] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) {
      const float wv = ws[tx][kk];
#pragma unroll
      for (int i = 0; i < kTile / kTileRows; ++i) acc[i] += xs[ty + i * kTileRows][kk] * wv;
    }
    __syncthreads();
  }
  const int64_t o = out0 + tx;
  if (o >= a.out_dim) return;
#pragma unroll
  for (int i = 0; i < kTile / kTileRows; ++i) {
    const int64_t r = row0 + ty + i * kTileRows;
    if (r >= a.num_rows) continue;
    float v = acc[i];
    if (a.bias) v += a.bias[g * a.out_dim + o];
    float* dst = a.out + r * a.out_row_stride + g * a.out_dim + o;
    *dst = a.accumulate ? *dst + v : v;
  }
}

// ---- argmax ----

struct Best {
  float v;
  int32_t i;
};

// b beats a if larger, or equal with a lower index (so ties go to the lowest index, and -0 == +0).
__device__ __forceinline__ Best better(Best a, Best b) {
  return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

__device__ __forceinline__ Best shfl_better(Best b) {
  for (int o = 16; o > 0; o >>= 1) {
    Best other;
    other.v = __shfl_xor_sync(0xffffffffu, b.v, o);
    other.i = __shfl_xor_sync(0xffffffffu, b.i, o);
    b = better(b, other);
  }
  return b;
}

__global__ void argmax_kernel(ArgmaxArgs a) {
  __shared__ Best scratch[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int32_t r = blockIdx.x; r < a.num_rows; r += gridDim.x) {
    const float* l = a.logits + static_cast<int64_t>(r) * a.vocab;
    Best b{-INFINITY, INT_MAX};
    int nan = 0;
    for (int32_t c = threadIdx.x; c < a.vocab; c += blockDim.x) {
      const float v = l[c];
      if (v != v) nan = 1;
      b = better(b, Best{v, c});
    }
    b = shfl_better(b);
    __syncthreads();  // scratch of the previous row has been read
    if (lane == 0) scratch[warp] = b;
    const int any_nan = __syncthreads_or(nan);
    if (warp == 0) {
      b = lane < warps ? scratch[lane] : Best{-INFINITY, INT_MAX};
      b = shfl_better(b);
      if (lane == 0) a.tokens[r] = (any_nan || a.vocab <= 0) ? -1 : b.i;
    }
  }
}

}  // namespace

void embed(const EmbedArgs& a, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(a.num_rows) * a.hidden;
  if (n <= 0) return;
  embed_kernel<<<grid_for(n), kThreads, 0, stream>>>(a);
}

void rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.num_rows <= 0) return;
  rms_norm_kernel<<<std::min(a.num_rows, 65535), kThreads, 0, stream>>>(a);
}

void linear(const LinearArgs& a, cudaStream_t stream) {
  if (a.groups < 1 || a.x_group_stride < 0)
    throw std::invalid_argument("linear: groups " + std::to_string(a.groups) +
                                " must be >= 1 and x_group_stride " +
                                std::to_string(a.x_group_stride) + " >= 0");
  if (a.num_rows <= 0 || a.out_dim <= 0) return;
  if (a.groups > 65535 || (a.num_rows + kTile - 1) / kTile > 65535)
    throw std::invalid_argument("linear: " + std::to_string(a.num_rows) + " rows x " +
                                std::to_string(a.groups) + " groups exceed the CUDA grid");
  const int64_t x_gs = a.x_group_stride == 0 ? a.in_dim : a.x_group_stride;
  const dim3 grid((a.out_dim + kTile - 1) / kTile, (a.num_rows + kTile - 1) / kTile, a.groups);
  linear_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(a, x_gs);
}

void argmax(const ArgmaxArgs& a, cudaStream_t stream) {
  if (a.num_rows <= 0) return;
  argmax_kernel<<<std::min(a.num_rows, 65535), kThreads, 0, stream>>>(a);
}

}  // namespace kv::cuda
