// ref_kernels.cu — the GPU reference's float64 kernels (ref_kernels.h says what each computes and
// why the file is built with -fmad=false).
#include "reference/cuda/ref_kernels.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "util/cuda_check.h"
#include "kernels/model_math.cuh"

namespace kv::refgpu {
namespace {

constexpr int kThreads = 128;   // attention: threads per (row, head)
constexpr int kMaxAcc = 8;      // attention: output features per thread, so dim <= 1024
constexpr float kRmsEps = 1e-6f;  // model/model_weights.h kRmsNormEps (checked on the host)

void launched(const char* what) { KV_CUDA_CHECK(what, cudaGetLastError()); }

unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

// A tile of kMmOut outputs x kMmRows rows per block, the columns in chunks of kMmK through shared
// memory (coalesced loads of W and x). Each thread owns one output and adds its products in
// column order, as the CPU reference's matvec does: the same value, bit for bit.
constexpr int kMmOut = 32, kMmRows = 8, kMmK = 32;

__global__ void matmul_kernel(int32_t n, const double* x, int64_t cols, const float* w,
                              const float* bias, int64_t rows, double* y, bool accumulate) {
  __shared__ float ws[kMmOut][kMmK + 1];
  __shared__ double xs[kMmRows][kMmK];
  const int tr = threadIdx.x, tn = threadIdx.y, tid = tn * kMmOut + tr;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kMmOut + tr;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kMmRows + tn;
  double s = bias && r < rows ? static_cast<double>(bias[r]) : 0.0;
  for (int64_t c0 = 0; c0 < cols; c0 += kMmK) {
    for (int i = tid; i < kMmOut * kMmK; i += kMmOut * kMmRows) {
      const int o = i / kMmK, k = i % kMmK;
      const int64_t wr = static_cast<int64_t>(blockIdx.x) * kMmOut + o;
      ws[o][k] = wr < rows && c0 + k < cols ? w[wr * cols + c0 + k] : 0.0f;
    }
    {
      const int rn = tid / kMmK, k = tid % kMmK;  // kMmRows * kMmK threads load x
      const int64_t xr = static_cast<int64_t>(blockIdx.y) * kMmRows + rn;
      xs[rn][k] = xr < n && c0 + k < cols ? x[xr * cols + c0 + k] : 0.0;
    }
    __syncthreads();
    const int kn = static_cast<int>(cols - c0 < kMmK ? cols - c0 : kMmK);
    for (int k = 0; k < kn; ++k) s += static_cast<double>(ws[tr][k]) * xs[tn][k];
    __syncthreads();
  }
  if (r >= rows || row >= n) return;
  if (accumulate)
    y[row * rows + r] += s;
  else
    y[row * rows + r] = s;
}

__global__ void embed_kernel(const Row* rows, int32_t n, const float* embed, int32_t hidden,
                             double* h) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * hidden) return;
  const Row r = rows[i / hidden];
  const int32_t f = static_cast<int32_t>(i % hidden);
  h[i] = static_cast<double>(embed[static_cast<int64_t>(r.token) * hidden + f]) +
         position_code<double>(r.pos, f, hidden);
}

__global__ void rms_norm_kernel(int32_t n, const double* h, int32_t hidden, double* x) {
  const int32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n) return;
  const double* hr = h + static_cast<int64_t>(row) * hidden;
  double ss = 0.0;
  for (int32_t i = 0; i < hidden; ++i) ss += hr[i] * hr[i];
  const double inv = 1.0 / sqrt(ss / static_cast<double>(hidden) + kRmsEps);
  for (int32_t i = 0; i < hidden; ++i) x[static_cast<int64_t>(row) * hidden + i] = hr[i] * inv;
}

__global__ void store_rounded_kernel(const Row* rows, int32_t n, char* const* slots,
                                     int64_t dst_off, int64_t dst_row, const double* src,
                                     int64_t src_row, int32_t width, DType dtype, float scale) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * width) return;
  const int64_t row = i / width, f = i % width;
  const Row r = rows[row];
  float* dst = reinterpret_cast<float*>(slots[r.slot] + dst_off) + r.pos * dst_row;
  dst[f] = round_through_scaled(static_cast<float>(src[row * src_row + f]), dtype, scale);
}

__global__ void store_rows_kernel(const Row* rows, int32_t n, char* const* slots,
                                  int64_t dst_off, int64_t dst_row, const double* src,
                                  int64_t src_row, int32_t width) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * width) return;
  const int64_t row = i / width, f = i % width;
  const Row r = rows[row];
  double* dst = reinterpret_cast<double*>(slots[r.slot] + dst_off) + r.pos * dst_row;
  dst[f] = src[row * src_row + f];
}

__global__ void gather_rows_kernel(const Row* rows, int32_t n, char* const* slots,
                                   int64_t src_off, int64_t src_row, int32_t width, double* dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * width) return;
  const int64_t row = i / width, f = i % width;
  const Row r = rows[row];
  dst[i] = reinterpret_cast<const double*>(slots[r.slot] + src_off)[r.pos * src_row + f];
}

__global__ void mla_expand_kernel(const Row* rows, int32_t n, char* const* slots,
                                  int64_t lat_off, int32_t lat_dim, int64_t kc_off, int64_t v_off,
                                  const float* wuk, const float* wuv, int32_t heads, int32_t dim,
                                  int32_t rank) {
  const int64_t q_dim = static_cast<int64_t>(heads) * dim;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * q_dim) return;
  const Row r = rows[i / q_dim];
  const int64_t e = i % q_dim;  // h * dim + d: row e of the [H][D][R] weights
  char* slot = slots[r.slot];
  const float* c = reinterpret_cast<const float*>(slot + lat_off) + r.pos * lat_dim;
  const float* wk = wuk + e * rank;
  const float* wv = wuv + e * rank;
  double sk = 0.0, sv = 0.0;
  for (int32_t j = 0; j < rank; ++j) {
    const double cj = static_cast<double>(c[j]);
    sk += static_cast<double>(wk[j]) * cj;
    sv += static_cast<double>(wv[j]) * cj;
  }
  reinterpret_cast<double*>(slot + kc_off)[r.pos * q_dim + e] = sk;
  reinterpret_cast<double*>(slot + v_off)[r.pos * q_dim + e] = sv;
}

// The largest (value, index) over the warp, the smaller index on a tie, on every lane.
__device__ void warp_first_max(double& v, int& i) {
  for (int off = 16; off > 0; off /= 2) {
    const double o = __shfl_xor_sync(0xffffffffu, v, off);
    const int oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (o > v || (o == v && oi < i)) {
      v = o;
      i = oi;
    }
  }
}

__device__ double warp_sum(double v) {  // the same tree on every lane: a deterministic sum
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One block per (row, layer); a warp per head. Deterministic sums (a fixed tree per launch
// shape). Non-finite engine values give NaN; the reference's are finite.
constexpr int kMeasureThreads = 256;

__global__ void measure_kernel(int32_t layers, int32_t heads, int32_t dim, const float* got,
                               const double* want, double floor_fraction, double* err) {
  __shared__ double part[kMeasureThreads / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t width = static_cast<int64_t>(heads) * dim;
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * layers + blockIdx.y) * width;
  double s = 0.0;
  for (int64_t i = tid; i < width; i += kMeasureThreads) s += want[base + i] * want[base + i];
  s = warp_sum(s);
  if (lane == 0) part[warp] = s;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kMeasureThreads / 32; ++w) total += part[w];
  const double floor = floor_fraction * sqrt(total) / sqrt(static_cast<double>(heads));
  for (int h = warp; h < heads; h += kMeasureThreads / 32) {
    double num = 0.0, den = 0.0;
    bool finite = true;
    for (int d = lane; d < dim; d += 32) {
      const float g = got[base + static_cast<int64_t>(h) * dim + d];
      const double w = want[base + static_cast<int64_t>(h) * dim + d];
      finite = finite && isfinite(g);
      const double diff = static_cast<double>(g) - w;
      num += diff * diff;
      den += w * w;
    }
    num = warp_sum(num);
    den = warp_sum(den);
    finite = __all_sync(0xffffffffu, finite);
    if (lane == 0)
      err[(static_cast<int64_t>(blockIdx.x) * layers + blockIdx.y) * heads + h] =
          finite ? sqrt(num) / fmax(fmax(sqrt(den), floor), 1e-30) : NAN;
  }
}

// attend_shared_kernel's steps. Scores: a warp per position, its lanes over the features.
template <class KT>
__device__ __forceinline__ void shared_scores(const AttendArgs& a, const double* qs, double* sc,
                                              const KT* K, const float* K2, int len, int len_cap,
                                              int qd) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int t = warp; t < len; t += warps) {
    const KT* kt = K + t * a.k_row;
    const float* kr = K2 + t * a.k2_row;
    for (int g = 0; g < a.group; ++g) {
      double part = 0.0;
      for (int e = lane; e < qd; e += 32)
        part += qs[g * qd + e] *
                (e < a.dim ? static_cast<double>(kt[e]) : static_cast<double>(kr[e - a.dim]));
      part = warp_sum(part);
      if (lane == 0) sc[g * len_cap + t] = part * a.scale;
    }
  }
}

// A warp per head: the first largest score (at), the weights p_t = exp(s_t - s_a) in place of
// the scores, and their sum (den).
__device__ __forceinline__ void shared_weights(int G, double* sc, double* den, int* at, int len,
                                               int len_cap) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int g = warp; g < G; g += warps) {
    double* s = sc + g * len_cap;
    double best = -INFINITY;
    int best_t = INT_MAX;
    for (int t = lane; t < len; t += 32)
      if (s[t] > best) {
        best = s[t];
        best_t = t;
      }
    warp_first_max(best, best_t);
    double sum = 0.0;
    for (int t = lane; t < len; t += 32) {
      const double p = exp(s[t] - best);
      s[t] = p;
      sum += p;
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      den[g] = sum;
      at[g] = best_t;
    }
  }
}

// Outputs o = (g, d): G * dim of them; `split` threads per output when they are few, their sums
// reduced through `red`.
template <class VT>
__device__ __forceinline__ void shared_outputs(const AttendArgs& a, const double* sc,
                                               const double* den, const int* at, double* red,
                                               const VT* V, double* out_row, int len,
                                               int len_cap) {
  const int tid = threadIdx.x;
  const int outs = a.group * a.dim;
  const int split = outs >= static_cast<int>(blockDim.x) ? 1 : blockDim.x / outs;
  for (int o0 = 0; o0 < outs; o0 += blockDim.x / split) {
    const int o = o0 + tid % (blockDim.x / split), part = tid / (blockDim.x / split);
    double acc = 0.0;
    const bool mine = o < outs && part < split;
    if (mine) {
      const int g = o / a.dim, d = o % a.dim;
      const double* p = sc + g * len_cap;
      const double va = static_cast<double>(V[at[g] * a.v_row + d]);
      for (int t = part; t < len; t += split)
        acc += p[t] * (static_cast<double>(V[t * a.v_row + d]) - va);
    }
    if (split > 1) {
      red[tid] = acc;
      __syncthreads();
      if (part == 0 && o < outs) {
        double sum = 0.0;
        for (int k = 0; k < split; ++k) sum += red[k * (blockDim.x / split) + tid];
        acc = sum;
      }
      __syncthreads();
    }
    if (mine && part == 0) {
      const int g = o / a.dim, d = o % a.dim;
      out_row[o] = static_cast<double>(V[at[g] * a.v_row + d]) + acc / den[g];
    }
  }
}

// One block per (K/V head, row), for the `group` query heads that share it, with every score of
// the row in shared memory: a warp computes one position's scores at a time (its lanes over the
// features: coalesced reads of K), a warp per head then finds the first largest score and turns
// the scores into weights p_t = exp(s_t - s_a) and their sum, and the threads accumulate
// sum p_t (v_t - v_a) over the features (over position groups too when the features are few).
// Used when the scores fit in shared memory (attend_smem_bytes); attend_kernel otherwise.
template <class KT, class VT>
__global__ void attend_shared_kernel(AttendArgs a, int len_cap) {
  extern __shared__ double smem[];
  const int kvh = blockIdx.x, n = blockIdx.y, tid = threadIdx.x;
  const int G = a.group, qd = a.dim + a.k2_dim;
  const Row r = a.rows[n];
  const int len = r.pos + 1;
  double* qs = smem;                 // [G][qd]
  double* sc = qs + G * qd;          // [G][len_cap]: scores, then weights
  double* den = sc + G * len_cap;    // [G]
  int* at = reinterpret_cast<int*>(den + G);  // [G]
  double* red = den + 2 * G;         // [blockDim.x]: the final reduction
  for (int i = tid; i < G * qd; i += blockDim.x) {
    const int g = i / qd, e = i % qd;
    const int64_t h = static_cast<int64_t>(kvh) * G + g;
    qs[i] = e < a.dim ? a.q[n * a.q_row + h * a.dim + e]
                      : a.q2[n * a.q2_row + h * a.k2_dim + (e - a.dim)];
  }
  __syncthreads();
  const char* slot = a.slots[r.slot];
  const KT* K = reinterpret_cast<const KT*>(slot + a.k_off) + kvh * a.k_head;
  const VT* V = reinterpret_cast<const VT*>(slot + a.v_off) + kvh * a.v_head;
  const float* K2 = reinterpret_cast<const float*>(slot + a.k2_off);
  shared_scores(a, qs, sc, K, K2, len, len_cap, qd);
  __syncthreads();
  shared_weights(G, sc, den, at, len, len_cap);
  __syncthreads();
  double* out_row = a.out + n * a.out_row + static_cast<int64_t>(kvh) * G * a.dim;
  shared_outputs(a, sc, den, at, red, V, out_row, len, len_cap);
}

// The grouped attention kernel (attend_rows_kernel, below): its shared memory and splits.
constexpr size_t kSharedLimitBytes = 200 * 1024;  // of the 227 KB a Hopper block may opt in to
constexpr int kRowsT = 32, kRowsThreads = 256, kRowsMaxPairs = 64, kRowsMaxOut = 8;
constexpr int kRowsMaxK = kRowsMaxPairs / (kRowsThreads / 32);

struct RowsSmem {
  size_t qs, pt, best, den, at, kt, k2t, vt, total;
};

__host__ __device__ inline size_t align8(size_t b) { return (b + 7) / 8 * 8; }

__host__ __device__ inline RowsSmem rows_smem(int pairs, int dim, int k2_dim, int k_bytes,
                                              int v_bytes) {
  RowsSmem m{};
  size_t at = 0;
  m.qs = at; at += align8(sizeof(double) * pairs * (dim + k2_dim));
  m.pt = at; at += align8(sizeof(double) * pairs * kRowsT);
  m.best = at; at += align8(sizeof(double) * pairs);
  m.den = at; at += align8(sizeof(double) * pairs);
  m.at = at; at += align8(sizeof(int) * pairs);
  m.kt = at; at += align8(static_cast<size_t>(k_bytes) * kRowsT * (dim + 1));
  m.k2t = at; at += align8(sizeof(float) * kRowsT * (k2_dim + 1));
  m.vt = at; at += align8(static_cast<size_t>(v_bytes) * kRowsT * dim);
  m.total = at;
  return m;
}

// Where split z of (query group, K/V head) keeps its partial state, in doubles from a.partials:
// per pair (best, den, at) then acc [pair][dim], for a.split_pairs pairs.
__host__ __device__ inline int64_t split_offset(const AttendArgs& a, int64_t group, int64_t kvh,
                                                int64_t z) {
  const int64_t per = int64_t{a.split_pairs} * (3 + a.dim);
  return ((group * (a.num_heads / a.group) + kvh) * a.split_count + z) * per;
}

// attend_rows_kernel's block: its group, its K/V head, its positions [lo, hi) and its shared
// memory, with the steps of the two passes.
template <class KT, class VT>
struct RowsBlock {
  const AttendArgs& a;
  QueryGroup grp;
  int kvh, tid, lane, warp;
  int G, D, P, qd, pairs;  // pairs: qg = q * G + g
  Row r0;
  int lo, hi;
  double *qs, *pt, *best, *den;
  int* at;
  KT* kt;
  float* k2t;
  VT* vt;
  const KT* K;
  const VT* V;
  const float* K2;
  int nk;  // pairs per warp: qg = warp + 8k

  __device__ __forceinline__ RowsBlock(const AttendArgs& args, char* smem) : a(args) {
    grp = a.groups[blockIdx.y];
    kvh = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    G = a.group, D = a.dim, P = a.k2_dim, qd = D + P;
    pairs = grp.count * G;
    r0 = a.rows[grp.row0];
    const int len = r0.pos + grp.count;
    // This block's positions [lo, hi): all of them, or one split of the context (gridDim.z > 1).
    lo = gridDim.z == 1 ? 0 : static_cast<int>(blockIdx.z) * a.split_len;
    hi = gridDim.z == 1 ? len : min(len, lo + a.split_len);
    const RowsSmem L = rows_smem(pairs, D, P, sizeof(KT), sizeof(VT));
    qs = reinterpret_cast<double*>(smem + L.qs);
    pt = reinterpret_cast<double*>(smem + L.pt);
    best = reinterpret_cast<double*>(smem + L.best);
    den = reinterpret_cast<double*>(smem + L.den);
    at = reinterpret_cast<int*>(smem + L.at);
    kt = reinterpret_cast<KT*>(smem + L.kt);
    k2t = reinterpret_cast<float*>(smem + L.k2t);
    vt = reinterpret_cast<VT*>(smem + L.vt);
    const char* slot = a.slots[r0.slot];
    K = reinterpret_cast<const KT*>(slot + a.k_off) + kvh * a.k_head;
    V = reinterpret_cast<const VT*>(slot + a.v_off) + kvh * a.v_head;
    K2 = reinterpret_cast<const float*>(slot + a.k2_off);
    nk = (pairs + 7) / 8;
  }

  __device__ __forceinline__ void load_q() {
    for (int i = tid; i < pairs * qd; i += kRowsThreads) {
      const int qg = i / qd, e = i % qd, q = qg / G, g = qg % G;
      const int64_t row = grp.row0 + q, h = static_cast<int64_t>(kvh) * G + g;
      qs[i] = e < D ? a.q[row * a.q_row + h * D + e] : a.q2[row * a.q2_row + h * P + (e - D)];
    }
  }

  __device__ __forceinline__ void load_k(int t0, int count) {
    for (int i = tid; i < count * D; i += kRowsThreads)
      kt[(i / D) * (D + 1) + i % D] = K[(t0 + i / D) * a.k_row + i % D];
    for (int i = tid; i < count * P; i += kRowsThreads)
      k2t[(i / P) * (P + 1) + i % P] = K2[(t0 + i / P) * a.k2_row + i % P];
  }

  __device__ __forceinline__ double score(int qg, int tt) const {
    const double* qv = qs + qg * qd;
    const KT* k = kt + tt * (D + 1);
    const float* kr = k2t + tt * (P + 1);
    double dot = 0.0;
    for (int d = 0; d < D; ++d) dot += qv[d] * static_cast<double>(k[d]);
    for (int p = 0; p < P; ++p) dot += qv[D + p] * static_cast<double>(kr[p]);
    return dot * a.scale;
  }

  // Pass 1: each pair's first largest score (lane = position in the tile, warp = pair) into
  // best and at. Fully unrolled loops over fixed bounds: the per-thread arrays stay in registers.
  __device__ __forceinline__ void first_max() {
    double bv[kRowsMaxK];
    int bi[kRowsMaxK];
#pragma unroll
    for (int k = 0; k < kRowsMaxK; ++k) {
      bv[k] = -INFINITY;
      bi[k] = INT_MAX;
    }
    for (int t0 = lo; t0 < hi; t0 += kRowsT) {
      const int count = min(kRowsT, hi - t0);
      __syncthreads();
      load_k(t0, count);
      __syncthreads();
      const int t = t0 + lane;
#pragma unroll
      for (int k = 0; k < kRowsMaxK; ++k) {
        const int qg = warp + 8 * k;
        if (k >= nk || qg >= pairs || lane >= count || t > r0.pos + qg / G) continue;
        const double s = score(qg, lane);
        if (s > bv[k]) {  // t grows: the first largest of this lane's positions
          bv[k] = s;
          bi[k] = t;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsMaxK; ++k) {
      if (k >= nk) break;
      double b = bv[k];
      int bt = bi[k];
      warp_first_max(b, bt);
      const int qg = warp + 8 * k;
      if (lane == 0 && qg < pairs) {
        best[qg] = b;
        at[qg] = bt;
      }
    }
  }

  // Pass 2: the weights p_t = exp(s_t - s_a) of each tile and sum p_t (v_t - v_a) in position
  // order into acc (each thread owning up to kRowsMaxOut outputs, va their v_a), den the sums.
  __device__ __forceinline__ void accumulate(double (&acc)[kRowsMaxOut],
                                             double (&va)[kRowsMaxOut]) {
    const int outs = pairs * D;
    double dsum[kRowsMaxK];
#pragma unroll
    for (int m = 0; m < kRowsMaxOut; ++m) {
      const int o = tid + m * kRowsThreads;
      acc[m] = 0.0;
      // A pair with no position in this split (at = INT_MAX) has weight 0 in the merge.
      va[m] = o < outs && at[o / D] != INT_MAX
                  ? static_cast<double>(V[at[o / D] * a.v_row + o % D])
                  : 0.0;
    }
#pragma unroll
    for (int k = 0; k < kRowsMaxK; ++k) dsum[k] = 0.0;
    for (int t0 = lo; t0 < hi; t0 += kRowsT) {
      const int count = min(kRowsT, hi - t0);
      __syncthreads();
      load_k(t0, count);
      for (int i = tid; i < count * D; i += kRowsThreads) vt[i] = V[(t0 + i / D) * a.v_row + i % D];
      __syncthreads();
      const int t = t0 + lane;
#pragma unroll
      for (int k = 0; k < kRowsMaxK; ++k) {
        const int qg = warp + 8 * k;
        if (k >= nk || qg >= pairs) continue;
        const double p =
            lane < count && t <= r0.pos + qg / G ? exp(score(qg, lane) - best[qg]) : 0.0;
        pt[qg * kRowsT + lane] = p;
        dsum[k] += p;
      }
      __syncthreads();
#pragma unroll
      for (int m = 0; m < kRowsMaxOut; ++m) {
        const int o = tid + m * kRowsThreads;
        if (o >= outs) continue;
        const double* p = pt + (o / D) * kRowsT;
        const int d = o % D;
        for (int tt = 0; tt < count; ++tt)
          acc[m] += p[tt] * (static_cast<double>(vt[tt * D + d]) - va[m]);
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsMaxK; ++k) {
      if (k >= nk) break;
      const double s = warp_sum(dsum[k]);
      const int qg = warp + 8 * k;
      if (lane == 0 && qg < pairs) den[qg] = s;
    }
  }

  // One split of several: its partial state, merged by merge_splits_kernel.
  __device__ __forceinline__ void write_split(const double (&acc)[kRowsMaxOut]) {
    const int outs = pairs * D;
    double* part = a.partials + split_offset(a, blockIdx.y, kvh, blockIdx.z);
    for (int qg = tid; qg < pairs; qg += kRowsThreads) {
      part[3 * qg] = best[qg];
      part[3 * qg + 1] = den[qg];
      part[3 * qg + 2] = at[qg] == INT_MAX ? -1.0 : static_cast<double>(at[qg]);
    }
#pragma unroll
    for (int m = 0; m < kRowsMaxOut; ++m) {
      const int o = tid + m * kRowsThreads;
      if (o < outs) part[3 * a.split_pairs + o] = acc[m];
    }
  }

  __device__ __forceinline__ void write_out(const double (&acc)[kRowsMaxOut],
                                            const double (&va)[kRowsMaxOut]) {
    const int outs = pairs * D;
#pragma unroll
    for (int m = 0; m < kRowsMaxOut; ++m) {
      const int o = tid + m * kRowsThreads;
      if (o >= outs) continue;
      const int qg = o / D, q = qg / G, g = qg % G;
      const int64_t row = grp.row0 + q, h = static_cast<int64_t>(kvh) * G + g;
      a.out[row * a.out_row + h * D + o % D] = va[m] + acc[m] / den[qg];
    }
  }
};

// Grouped: one block per (K/V head, query group) — up to 16 consecutive positions of one
// request, with the `group` query heads sharing the K/V head — and K/V read through shared
// memory a tile of 32 positions at a time, once for all of the group's (row, head) pairs. Pass 1
// finds each pair's first largest score (lane = position in the tile, warp = pair); pass 2
// recomputes the scores, stores the weights p_t = exp(s_t - s_a) of the tile and accumulates
// sum p_t (v_t - v_a) in position order, each thread owning up to kRowsMaxOut outputs.
// Scores are formed in the CPU reference's order (features in order, then the rope part).
template <class KT, class VT>
__global__ void __launch_bounds__(kRowsThreads, 2) attend_rows_kernel(AttendArgs a) {
  extern __shared__ double smem_d[];
  RowsBlock<KT, VT> b(a, reinterpret_cast<char*>(smem_d));
  b.load_q();
  b.first_max();
  __syncthreads();
  double acc[kRowsMaxOut], va[kRowsMaxOut];
  b.accumulate(acc, va);
  __syncthreads();
  if (gridDim.z > 1) {
    b.write_split(acc);
    return;
  }
  b.write_out(acc, va);
}

// Merges the splits of one (K/V head, query group): per pair, the first largest score over the
// splits (splits are in position order, so the first split holding the maximum holds the first
// position that reaches it), and out = v_a + sum_z w_z (acc_z + den_z (v_az - v_a)) /
// sum_z w_z den_z with w_z = exp(best_z - best).
template <class VT>
__global__ void merge_splits_kernel(AttendArgs a) {
  const QueryGroup grp = a.groups[blockIdx.y];
  const int kvh = blockIdx.x, G = a.group, D = a.dim, splits = a.split_count;
  const int pairs = grp.count * G;
  const char* slot = a.slots[a.rows[grp.row0].slot];
  const VT* V = reinterpret_cast<const VT*>(slot + a.v_off) + kvh * a.v_head;
  const double* part0 = a.partials + split_offset(a, blockIdx.y, kvh, 0);
  const int64_t stride = split_offset(a, 0, 0, 1);
  for (int o = threadIdx.x; o < pairs * D; o += blockDim.x) {
    const int qg = o / D, d = o % D;
    double best = -INFINITY;
    int at = -1;
    for (int z = 0; z < splits; ++z) {
      const double* p = part0 + z * stride;
      if (p[3 * qg + 2] >= 0.0 && p[3 * qg] > best) {
        best = p[3 * qg];
        at = static_cast<int>(p[3 * qg + 2]);
      }
    }
    const double va = static_cast<double>(V[at * a.v_row + d]);
    double num = 0.0, den = 0.0;
    for (int z = 0; z < splits; ++z) {
      const double* p = part0 + z * stride;
      if (p[3 * qg + 2] < 0.0) continue;  // no position of this split is before the query's
      const double w = exp(p[3 * qg] - best);
      const double vz = static_cast<double>(V[static_cast<int>(p[3 * qg + 2]) * a.v_row + d]);
      num += w * (p[3 * a.split_pairs + o] + p[3 * qg + 1] * (vz - va));
      den += w * p[3 * qg + 1];
    }
    const int q = qg / G, g = qg % G;
    const int64_t row = grp.row0 + q, h = static_cast<int64_t>(kvh) * G + g;
    a.out[row * a.out_row + h * D + d] = va + num / den;
  }
}

// attend_kernel's pass 1: the block's first largest score of positions [0, len) (a thread per
// position in turn, then a tree over the threads, the smaller position winning a tie).
template <class Score>
__device__ __forceinline__ void block_first_max(const Score& score, int len, double* s_val,
                                                int* s_idx, double& top, int& at) {
  const int tid = threadIdx.x;
  double best = -INFINITY;
  int best_t = INT_MAX;
  for (int t = tid; t < len; t += kThreads) {
    const double s = score(t);
    if (s > best) {  // t grows: the first largest of this thread's positions
      best = s;
      best_t = t;
    }
  }
  s_val[tid] = best;
  s_idx[tid] = best_t;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (tid < stride) {
      const double o = s_val[tid + stride];
      const int ot = s_idx[tid + stride];
      if (o > s_val[tid] || (o == s_val[tid] && ot < s_idx[tid])) {
        s_val[tid] = o;
        s_idx[tid] = ot;
      }
    }
    __syncthreads();
  }
  top = s_val[0];
  at = s_idx[0];
  __syncthreads();
}

// One block per (head, row). Pass 1 finds the first largest score; pass 2 recomputes the scores
// a tile at a time, turns them into weights p_t = exp(s_t - s_a) and accumulates
// sum p_t (v_t - v_a) — over the tile's positions by groups of threads when dim is small.
template <class KT, class VT>
__global__ void attend_kernel(AttendArgs a) {
  const int h = blockIdx.x, n = blockIdx.y, tid = threadIdx.x;
  const Row r = a.rows[n];
  const char* slot = a.slots[r.slot];
  const KT* K = reinterpret_cast<const KT*>(slot + a.k_off) + (h / a.group) * a.k_head;
  const VT* V = reinterpret_cast<const VT*>(slot + a.v_off) + (h / a.group) * a.v_head;
  const float* K2 = reinterpret_cast<const float*>(slot + a.k2_off);
  const double* q = a.q + n * a.q_row + static_cast<int64_t>(h) * a.dim;
  const double* q2 = a.q2 + n * a.q2_row + static_cast<int64_t>(h) * a.k2_dim;
  const int len = r.pos + 1;
  auto score = [&](int t) {
    const KT* kt = K + t * a.k_row;
    double dot = 0.0;
    for (int d = 0; d < a.dim; ++d) dot += q[d] * static_cast<double>(kt[d]);
    const float* kr = K2 + t * a.k2_row;
    for (int p = 0; p < a.k2_dim; ++p) dot += q2[p] * static_cast<double>(kr[p]);
    return dot * a.scale;
  };

  __shared__ double s_val[kThreads];
  __shared__ int s_idx[kThreads];
  double top;
  int at;
  block_first_max(score, len, s_val, s_idx, top, at);

  const VT* va = V + at * a.v_row;
  const int groups = a.dim >= kThreads ? 1 : kThreads / a.dim;
  const int g = a.dim >= kThreads ? 0 : tid / a.dim;
  const int d0 = a.dim >= kThreads ? tid : tid % a.dim;
  double acc[kMaxAcc];
  for (int k = 0; k < kMaxAcc; ++k) acc[k] = 0.0;
  double denom = 0.0;  // thread 0's, in position order
  double* p_tile = s_val;
  for (int t0 = 0; t0 < len; t0 += kThreads) {
    const int count = min(kThreads, len - t0);
    p_tile[tid] = tid < count ? exp(score(t0 + tid) - top) : 0.0;
    __syncthreads();
    if (tid == 0)
      for (int i = 0; i < count; ++i) denom += p_tile[i];
    if (groups > 1) {
      if (g < groups)
        for (int i = g; i < count; i += groups) {
          const VT* vt = V + (t0 + i) * a.v_row;
          acc[0] += p_tile[i] * (static_cast<double>(vt[d0]) - static_cast<double>(va[d0]));
        }
    } else {
      for (int i = 0; i < count; ++i) {
        const double p = p_tile[i];
        const VT* vt = V + (t0 + i) * a.v_row;
        for (int k = 0, d = d0; d < a.dim; ++k, d += kThreads)
          acc[k] += p * (static_cast<double>(vt[d]) - static_cast<double>(va[d]));
      }
    }
    __syncthreads();
  }
  __shared__ double s_denom;
  if (tid == 0) s_denom = denom;
  double* out = a.out + n * a.out_row + static_cast<int64_t>(h) * a.dim;
  if (groups > 1) {
    s_val[tid] = acc[0];  // s_val is free again: every thread passed the last barrier
    __syncthreads();
    if (tid < a.dim) {
      double sum = 0.0;
      for (int k = 0; k < groups; ++k) sum += s_val[k * a.dim + tid];
      out[tid] = static_cast<double>(va[tid]) + sum / s_denom;
    }
  } else {
    __syncthreads();
    for (int k = 0, d = d0; d < a.dim; ++k, d += kThreads)
      out[d] = static_cast<double>(va[d]) + acc[k] / s_denom;
  }
}

// One block per (segment, head), one thread per value feature j owning column j of the state.
__global__ void linear_kernel(const Segment* segs, char* const* slots, int64_t state_off,
                              const double* q, const double* k, const double* v,
                              const double* gate, int32_t heads, int32_t dim, double scale,
                              double* out) {
  const Segment sg = segs[blockIdx.x];
  const int h = blockIdx.y, j = threadIdx.x;
  const int64_t q_dim = static_cast<int64_t>(heads) * dim;
  double* S = reinterpret_cast<double*>(slots[sg.slot] + state_off) +
              static_cast<int64_t>(h) * dim * dim;
  for (int32_t n = sg.row0; n < sg.row0 + sg.count; ++n) {
    const double g = 1.0 / (1.0 + exp(-gate[static_cast<int64_t>(n) * heads + h]));
    const double* kh = k + n * q_dim + static_cast<int64_t>(h) * dim;
    const double* vh = v + n * q_dim + static_cast<int64_t>(h) * dim;
    const double* qh = q + n * q_dim + static_cast<int64_t>(h) * dim;
    for (int i = 0; i < dim; ++i) S[i * dim + j] = g * S[i * dim + j] + kh[i] * vh[j];
    double s = 0.0;
    for (int i = 0; i < dim; ++i) s += qh[i] * S[i * dim + j];
    out[n * q_dim + static_cast<int64_t>(h) * dim + j] = scale * s;
  }
}

__device__ double quant_fp8(double v, float scale) {
  return round_through_scaled(static_cast<float>(v), DType::fp8_e4m3, scale);
}

__device__ unsigned long long mix(unsigned long long x) {  // one multiply, one xor-shift
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

__global__ void quantise_kernel(const Row* rows, int32_t n, const double* o, int32_t width,
                                const float* hints, float scale, double window, double* o_in,
                                unsigned long long* ties, int32_t layer, int32_t layers) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * width) return;
  const double exact = o[i];
  const double ours = quant_fp8(exact, scale);
  double pick = ours;
  if (rows[i / width].hinted) {  // ref_sequence.cpp settle_tie
    const double theirs = hints[i];
    if (theirs != ours && isfinite(theirs) && quant_fp8(theirs, scale) == theirs) {
      const double mid = 0.5 * (ours + theirs);
      if (fabs(exact - mid) <= window * fabs(theirs - ours)) {
        pick = theirs;
        // (element + 1, code) is never 0, and mix() maps only 0 to 0.
        const unsigned long long code = __float_as_uint(static_cast<float>(theirs));
        atomicAdd(&ties[(i / width) * layers + layer],
                  mix((static_cast<unsigned long long>(i % width + 1) << 32) ^ code));
      }
    }
  }
  o_in[i] = pick;
}


__global__ void hash_kernel(const HashRange* ranges, unsigned long long* sums) {
  const HashRange r = ranges[blockIdx.x];
  unsigned long long acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t i = r.begin + static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
       i < r.end; i += stride)
    acc += mix((static_cast<unsigned long long>(i) << 32) ^ r.words[i]);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicAdd(&sums[blockIdx.x], acc);
}

}  // namespace

void matmul(cudaStream_t st, int32_t n, const double* x, int64_t cols, const float* w,
            const float* bias, int64_t rows, double* y, bool accumulate) {
  if (n == 0 || rows == 0) return;
  static_assert(kMmRows * kMmK == kMmOut * kMmRows, "one x element per thread per chunk");
  const dim3 grid(blocks_for(rows, kMmOut), blocks_for(n, kMmRows));
  matmul_kernel<<<grid, dim3(kMmOut, kMmRows), 0, st>>>(n, x, cols, w, bias, rows, y, accumulate);
  launched("reference matmul");
}

void embed(cudaStream_t st, const Row* rows, int32_t n, const float* emb, int32_t hidden,
           double* h) {
  if (n == 0) return;
  embed_kernel<<<blocks_for(int64_t{n} * hidden, 256), 256, 0, st>>>(rows, n, emb, hidden, h);
  launched("reference embed");
}

void rms_norm(cudaStream_t st, int32_t n, const double* h, int32_t hidden, double* x) {
  if (n == 0) return;
  rms_norm_kernel<<<blocks_for(n, 128), 128, 0, st>>>(n, h, hidden, x);
  launched("reference rms_norm");
}

void store_rounded(cudaStream_t st, const Row* rows, int32_t n, char* const* slots,
                   int64_t dst_off, int64_t dst_row, const double* src, int64_t src_row,
                   int32_t width, DType dtype, float scale) {
  if (n == 0) return;
  store_rounded_kernel<<<blocks_for(int64_t{n} * width, 256), 256, 0, st>>>(
      rows, n, slots, dst_off, dst_row, src, src_row, width, dtype, scale);
  launched("reference store_rounded");
}

void store_rows(cudaStream_t st, const Row* rows, int32_t n, char* const* slots, int64_t dst_off,
                int64_t dst_row, const double* src, int64_t src_row, int32_t width) {
  if (n == 0) return;
  store_rows_kernel<<<blocks_for(int64_t{n} * width, 256), 256, 0, st>>>(
      rows, n, slots, dst_off, dst_row, src, src_row, width);
  launched("reference store_rows");
}

void gather_rows(cudaStream_t st, const Row* rows, int32_t n, char* const* slots,
                 int64_t src_off, int64_t src_row, int32_t width, double* dst) {
  if (n == 0) return;
  gather_rows_kernel<<<blocks_for(int64_t{n} * width, 256), 256, 0, st>>>(
      rows, n, slots, src_off, src_row, width, dst);
  launched("reference gather_rows");
}

void measure_rows(cudaStream_t st, int32_t n, int32_t layers, int32_t heads, int32_t dim,
                  const float* got, const double* want, double floor_fraction, double* err) {
  if (n == 0 || layers == 0) return;
  measure_kernel<<<dim3(n, layers), kMeasureThreads, 0, st>>>(layers, heads, dim, got, want,
                                                              floor_fraction, err);
  launched("reference measure");
}

void mla_expand(cudaStream_t st, const Row* rows, int32_t n, char* const* slots, int64_t lat_off,
                int32_t lat_dim, int64_t kc_off, int64_t v_off, const float* wuk, const float* wuv,
                int32_t heads, int32_t dim, int32_t rank) {
  if (n == 0) return;
  mla_expand_kernel<<<blocks_for(int64_t{n} * heads * dim, 128), 128, 0, st>>>(
      rows, n, slots, lat_off, lat_dim, kc_off, v_off, wuk, wuv, heads, dim, rank);
  launched("reference mla_expand");
}

constexpr int kSharedThreads = 256;

size_t attend_smem_bytes(const AttendArgs& a, int len_cap) {
  const size_t G = static_cast<size_t>(a.group);
  return 8 * (G * (a.dim + a.k2_dim) + G * len_cap + 2 * G + kSharedThreads);
}

// Bytes of a K or V element in the history: MLA's expanded rows are double, attention's float
// (the launchers' KT and VT; attend() checks that they agree).
static int kv_element_bytes(const AttendArgs& a) { return a.k2_dim ? 8 : 4; }

int32_t attend_query_tile(const AttendArgs& a) {
  const int pairs_per_row = a.group, outs_per_row = a.group * a.dim;
  int32_t tile = std::min({16, kRowsMaxPairs / pairs_per_row,
                           kRowsMaxOut * kRowsThreads / std::max(outs_per_row, 1)});
  const int kb = kv_element_bytes(a);
  while (tile > 0 &&
         rows_smem(tile * a.group, a.dim, a.k2_dim, kb, kb).total > kSharedLimitBytes)
    tile /= 2;
  return std::max(tile, 0);
}

// Lets `Kernel` take up to kSharedLimitBytes of dynamic shared memory: once per kernel (a
// thread-safe static; a failure throws and is tried again next time).
template <auto Kernel>
void allow_large_smem(const char* what) {
  static const bool done = [what] {
    KV_CUDA_CHECK(what, cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(kSharedLimitBytes)));
    return true;
  }();
  (void)done;
}

// A batch of few query groups (decode of a few requests) leaves most SMs idle while each block
// walks the whole context: split the context so that the grid has about kSplitTargetBlocks blocks
// (two per SM of a 132-SM Hopper), each split at least kSplitMinLen positions, as many as the
// partial-state buffer holds.
constexpr int64_t kSplitTargetBlocks = 264, kSplitMinLen = 256;

static AttendArgs with_splits(AttendArgs a, int32_t max_len) {
  a.split_count = 1;
  a.split_pairs = a.max_group_rows * a.group;
  const int64_t blocks = int64_t{a.num_heads / a.group} * a.num_groups;
  if (!a.partials || blocks >= kSplitTargetBlocks || max_len < 2 * kSplitMinLen) return a;
  int64_t splits = std::min((kSplitTargetBlocks + blocks - 1) / blocks,
                            (max_len + kSplitMinLen - 1) / kSplitMinLen);
  for (; splits > 1; --splits) {
    a.split_count = static_cast<int32_t>(splits);
    if (split_offset(a, a.num_groups, 0, 0) <= a.partial_capacity) break;
  }
  if (splits <= 1) {
    a.split_count = 1;
    return a;
  }
  const int64_t len = (max_len + splits - 1) / splits;
  a.split_len = static_cast<int32_t>((len + kRowsT - 1) / kRowsT * kRowsT);
  a.split_count = static_cast<int32_t>((max_len + a.split_len - 1) / a.split_len);
  return a;
}

template <class KT, class VT>
static void attend(cudaStream_t st, const AttendArgs& a, int32_t max_len, const char* what) {
  if (a.num_rows == 0) return;
  if (a.dim > kThreads * kMaxAcc)
    throw DeviceError(std::string(what) + ": head dim above the GPU reference's 1024");
  if (a.groups) {
    if (sizeof(KT) != static_cast<size_t>(kv_element_bytes(a)) || sizeof(VT) != sizeof(KT))
      throw std::logic_error(std::string(what) + ": K/V element size is not the layer kind's");
    if (a.max_group_rows < 1 || a.max_group_rows > attend_query_tile(a))
      throw std::logic_error(std::string(what) + ": query groups larger than the kernel takes");
    allow_large_smem<attend_rows_kernel<KT, VT>>(what);
    // Shared memory for the largest group of the batch (a decode batch's groups are one row).
    const size_t smem =
        rows_smem(a.max_group_rows * a.group, a.dim, a.k2_dim, sizeof(KT), sizeof(VT)).total;
    const AttendArgs b = with_splits(a, max_len);
    const dim3 grid(a.num_heads / a.group, a.num_groups, b.split_count);
    attend_rows_kernel<KT, VT><<<grid, kRowsThreads, smem, st>>>(b);
    launched(what);
    if (b.split_count > 1) {
      merge_splits_kernel<VT><<<dim3(grid.x, grid.y), kRowsThreads, 0, st>>>(b);
      launched(what);
    }
    return;
  }
  const size_t smem = attend_smem_bytes(a, max_len);
  if (smem <= kSharedLimitBytes) {
    allow_large_smem<attend_shared_kernel<KT, VT>>(what);
    attend_shared_kernel<KT, VT><<<dim3(a.num_heads / a.group, a.num_rows), kSharedThreads, smem,
                                   st>>>(a, max_len);
  } else {
    attend_kernel<KT, VT><<<dim3(a.num_heads, a.num_rows), kThreads, 0, st>>>(a);
  }
  launched(what);
}

void attend_attention(cudaStream_t st, const AttendArgs& a, int32_t max_len) {
  attend<float, float>(st, a, max_len, "reference attention");
}

void attend_mla(cudaStream_t st, const AttendArgs& a, int32_t max_len) {
  attend<double, double>(st, a, max_len, "reference mla attention");
}

void linear_attention(cudaStream_t st, const Segment* segs, int32_t num_segs, char* const* slots,
                      int64_t state_off, const double* q, const double* k, const double* v,
                      const double* gate, int32_t heads, int32_t dim, double scale, double* out) {
  if (num_segs == 0) return;
  linear_kernel<<<dim3(num_segs, heads), dim, 0, st>>>(segs, slots, state_off, q, k, v, gate,
                                                       heads, dim, scale, out);
  launched("reference linear attention");
}

void quantise(cudaStream_t st, const Row* rows, int32_t n, const double* o, int32_t width,
              const float* hints, float scale, double tie_window, double* o_in,
              unsigned long long* ties, int32_t layer, int32_t layers) {
  if (n == 0) return;
  quantise_kernel<<<blocks_for(int64_t{n} * width, 256), 256, 0, st>>>(
      rows, n, o, width, hints, scale, tie_window, o_in, ties, layer, layers);
  launched("reference quantise");
}

void hash_ranges(cudaStream_t st, const HashRange* ranges, int32_t n, unsigned long long* sums) {
  if (n == 0) return;
  KV_CUDA_CHECK("reference hash", cudaMemsetAsync(sums, 0, sizeof(unsigned long long) * n, st));
  hash_kernel<<<dim3(n, 16), 256, 0, st>>>(ranges, sums);
  launched("reference hash");
}

}  // namespace kv::refgpu
