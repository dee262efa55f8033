// paged_decode.cu — CUDA op: split-KV paged decode (flash-decoding), one query token per row.
//
// Reference: kernels/host/paged_decode.cpp (the spec) and the PagedDecodeArgs comments of
// kernels/op_args.cuh. Built into kv_cuda by the top-level CMakeLists (glob of kernels/cuda/*.cu);
// alone: nvcc -std=c++20 -O3 -arch=sm_90 -I. -Isrc -c kernels/cuda/paged_decode.cu
// (add -Xptxas -v to see registers / spills, cuobjdump --dump-sass for LDGSTS.128 and HMMA).
//
// What every path shares with the host, because it is what makes bugs visible:
//   - tiles are cache blocks: scores of entries outside [start, end) of the split are -inf by
//     selection (a NaN/Inf in K there never enters), but P·V runs over EVERY entry of every block
//     the split touches, so a stale NaN in V of the unused tail of the last block reaches the
//     output (p = 0 times NaN). That is the seed-000 mechanism: keep it;
//   - the split plan is read from device memory (split_meta), so a graph replays whatever plan the
//     persistent buffer holds. Grids are sized for the worst case (rows x heads x max_splits) and a
//     CTA past its row's split count exits at once;
//   - a row with seq_len 0 (a padded graph row) writes nothing at all: no out, no partials;
//   - each split leaves a state (output normalised by its own sum, natural-log lse) in the
//     workspace and a merge kernel combines the splits of a row. A row with exactly one split is
//     written straight to `out` as merge_weights(empty, state) would (the host's merge of one
//     split), so the merge kernel skips it and is not launched at all when max_splits is 1;
//   - plans the host rejects with an exception (more splits than the workspace, chunk <= 0) cannot
//     be seen from the host here: such a row gets NaN in `out`, so a check catches it. A row with
//     seq_len > 0 and 0 splits gets zeros, as the host's empty merge writes.
//
// Three decode paths, chosen at launch from the descriptor (kv::cuda::paged_decode_path forces
// one; KVCHECK_DECODE_PATH=generic in the environment forces the simple one for a whole run):
//   generic  any dtype, head_dim <= 1024, any block size, layout, GQA ratio: CTA = (row, split, q
//            head), float32 like the host, written to be obviously right, not fast;
//   gqa_tc   bf16, head_dim 64/128, v_dim = head_dim, up to 8 q heads per kv head, power-of-two
//            block size: CTA = (row, split, kv head), 4 independent warps streaming 16-token
//            sub-tiles through a 3-stage cp.async ring, Q·K^T and P·V on mma.sync with q and p
//            split into bf16 hi + lo halves (rows 0-7 and 8-15 of the m16 tile), so the result has
//            float32-like accuracy at no extra tensor cost;
//   mla_tc   MLA: head_dim 576, v_dim 512, cache.v == cache.k, bf16 or fp8_e4m3: CTA = (row, split,
//            kv head, 64 q heads), 8 warps, 64-token tiles double-buffered in shared memory, Q·K^T
//            and P·V on mma.sync in bf16 (fp8: converted to f16, q scaled by a power of two per
//            head), FlashMLA-like precision.
// The reasons for these shapes, and the byte/flop floors, are in results/decode-bench.md.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "device/device.h"  // kv::DeviceError
#include "kernels/attn_state.cuh"
#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"

#if __has_include("kernels/cuda/cuda_ops.h")
#include "kernels/cuda/cuda_ops.h"
#else
namespace kv::cuda {
// The declaration of kernels/cuda/cuda_ops.h, for a tree that does not have that header.
void paged_decode(const PagedDecodeArgs& a, cudaStream_t stream);
}  // namespace kv::cuda
#endif

namespace kv::cuda {

// Which decode path runs; `automatic` takes the fastest one the descriptor allows. Declared for
// the benchmark and the checks in tests/bench/decode_paths.h.
enum class DecodePath : int32_t { automatic = 0, generic = 1, gqa_tc = 2, mla_tc = 3 };
void paged_decode_path(const PagedDecodeArgs& a, DecodePath path, cudaStream_t stream);
const char* decode_path_name(DecodePath p);
// The path `automatic` picks for `a` (never automatic), and whether `p` can run `a` (why not).
DecodePath decode_path_for(const PagedDecodeArgs& a);
bool decode_path_supports(const PagedDecodeArgs& a, DecodePath p, std::string* why);

namespace {

// =================================================================================================
// Shared device helpers: the split plan, where a finished state goes, PTX wrappers
// =================================================================================================

// What the CTA of (row, split) has to do, read from the device-side plan exactly as the host op
// reads it. `fill_zero` / `fill_nan` are done by the split-0 CTA of a row only.
struct Split {
  enum Kind : int { skip, fill_zero, fill_nan, empty, attend };
  Kind kind = skip;
  int32_t num_splits = 0;
  int32_t start = 0, end = 0;  // tokens [start, end) of the row, end <= seq_len (an int32)
};

__device__ __forceinline__ Split read_split(const PagedDecodeArgs& a, int row, int s) {
  Split r;
  const int64_t seq_len = a.seq_lens[row];
  if (seq_len <= 0) return r;  // a padded row writes nothing
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  r.num_splits = ns;
  if (ns > a.max_splits || (ns > 0 && chunk <= 0)) {  // the host throws: make it loud instead
    r.kind = s == 0 ? Split::fill_nan : Split::skip;
    return r;
  }
  if (ns <= 0) {  // the host merges zero states: output 0
    r.kind = s == 0 ? Split::fill_zero : Split::skip;
    return r;
  }
  if (s >= ns) return r;
  const int64_t start = s * chunk;  // past seq_len for an empty split; clamped below
  r.start = static_cast<int32_t>(min(start, seq_len));
  r.end = static_cast<int32_t>(min(start + chunk, seq_len));
  r.kind = r.start < r.end ? Split::attend : Split::empty;
  return r;
}

__device__ __forceinline__ int64_t partial_index(const PagedDecodeArgs& a, int row, int s, int h) {
  return (static_cast<int64_t>(row) * a.max_splits + s) * a.num_q_heads + h;
}

// Where the finished state of (row, split, head) goes: the workspace, or, for a row with one
// split, `out` as the host's merge of that state with the empty one writes it (wa * 0 + wb * o,
// which is o for a finite lse and keeps NaN visible).
struct StateSink {
  float* o = nullptr;
  float* lse = nullptr;  // null when direct
  MergeWeights w{};
  bool direct = false;
  __device__ __forceinline__ void put(int i, float v) const {
    o[i] = direct ? w.wa * 0.0f + w.wb * v : v;
  }
  __device__ __forceinline__ void put_lse(float l) const {
    if (!direct) *lse = l;
  }
};

__device__ __forceinline__ StateSink state_sink(const PagedDecodeArgs& a, int row, int s, int ns,
                                                int h, int vd, float lse) {
  StateSink k;
  k.direct = ns == 1;
  if (k.direct) {
    k.o = a.out + row * a.out_row_stride + static_cast<int64_t>(h) * vd;
    k.w = merge_weights(-INFINITY, lse);
  } else {
    const int64_t idx = partial_index(a, row, s, h);
    k.o = a.partial_out + idx * vd;
    k.lse = a.partial_lse + idx;
  }
  return k;
}

// The CTA-wide writes that need no attention: a row the plan gives 0 splits (zeros) or a broken
// plan (NaN) for heads [h0, h0 + nh), and the empty state (0, -inf) of a split past the row's end.
__device__ void fill_out_heads(const PagedDecodeArgs& a, int row, int h0, int nh, int vd, float v) {
  float* o = a.out + row * a.out_row_stride + static_cast<int64_t>(h0) * vd;
  for (int i = threadIdx.x; i < nh * vd; i += blockDim.x) o[i] = v;
}

__device__ void write_empty_split(const PagedDecodeArgs& a, int row, int s, int ns, int h0, int nh,
                                  int vd) {
  for (int h = h0; h < h0 + nh; ++h) {
    const StateSink k = state_sink(a, row, s, ns, h, vd, -INFINITY);
    for (int i = threadIdx.x; i < vd; i += blockDim.x) k.put(i, 0.0f);
    if (threadIdx.x == 0) k.put_lse(-INFINITY);
  }
}

__device__ __forceinline__ float warp_max_ignore_nan(float v, int lanes_mask_width) {
  // fmaxf drops a NaN operand, as the host's `if (s > tile_max)` does.
  for (int o = 1; o < lanes_mask_width; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy that bypasses L1; `present` false writes 16 zero bytes and reads
// nothing (the source address must still be a valid one).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool present) {
  const int n = present ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D += A·B on one m16n8k16 tile, float accumulators; kF16 picks f16 operands, else bf16.
template <bool kF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats as one register of 16-bit operands, element `lo` in the low half (the lower k or n
// index of an mma fragment).
template <bool kF16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kF16) {
    __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

// x = hi + lo + O(2^-17 |x|) with hi, lo bf16: the float32 value as two bf16 operands.
__device__ __forceinline__ void split_bf16(float x, float& hi, float& lo) {
  hi = __bfloat162float(__float2bfloat16_rn(x));
  lo = x - hi;
}

// Byte offset of 16-byte chunk `ch` of row `r` in a tile of rows of `row_bytes` bytes, XOR-
// swizzled over groups of 8 chunks so that the 8 rows an ldmatrix phase reads, and the 8 chunks a
// cp.async phase writes, fall in 8 different bank groups. row_bytes must be a multiple of 128.
__device__ __forceinline__ uint32_t swz(int r, int ch, int row_bytes) {
  return static_cast<uint32_t>(r * row_bytes + ((ch ^ (r & 7)) << 4));
}

// =================================================================================================
// Generic path: obviously right for every descriptor
// =================================================================================================
//
// CTA = (row, split, q head), 128 threads. Per tile (= cache block): a warp per entry computes the
// score (lanes stride the features, warp sum), every thread then runs the same serial softmax
// bookkeeping as the host (identical copies of the state, no broadcast needed), and each thread
// owns v_dim / 128 output features for the P·V over every entry of the block.

constexpr int kGenericThreads = 128;
constexpr int kGenericMaxVdPerThread = 8;  // v_dim <= 1024
constexpr int kMaxHeadDim = kGenericThreads * kGenericMaxVdPerThread;

__global__ void __launch_bounds__(kGenericThreads)
    decode_generic_kernel(const PagedDecodeArgs a, int vd) {
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
  if (sp.kind == Split::skip) return;
  if (sp.kind == Split::fill_zero || sp.kind == Split::fill_nan) {
    fill_out_heads(a, row, h, 1, vd, sp.kind == Split::fill_nan ? NAN : 0.0f);
    return;
  }
  if (sp.kind == Split::empty) {
    write_empty_split(a, row, s, sp.num_splits, h, 1, vd);
    return;
  }

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

// =================================================================================================
// Split merge: rows with 2 or more splits
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

// =================================================================================================
// GQA path: bf16, head_dim 64/128, <= 8 q heads per kv head, tensor cores with hi/lo operands
// =================================================================================================
//
// Why tensor cores at only 4 q heads per kv head: on CUDA cores the dot products cost ~50
// instructions per token and head (conversions, 4 FMAs per element, 16-lane shuffle trees), half of
// an H100's issue rate at full HBM bandwidth; one m16n8k16 covers 16 tokens x 16 features for all
// heads of the group. The m16 rows are (q heads 0-7 as bf16 hi) and (the same heads as bf16 lo =
// x - hi): one mma then yields hi·K and lo·K in the same lane (c0,c1 and c2,c3), whose sum is q·K to
// ~2^-17 — float32-like accuracy from rows that would otherwise be idle. P·V the same way with p.
//
// CTA = (row, split, kv head), 4 warps. Warp w takes the 16-token sub-tiles w, w+4, ... of the
// split, each with its own online-softmax state and a private 3-stage cp.async ring (K and V of a
// sub-tile, 16-byte copies, rows XOR-swizzled for conflict-free ldmatrix). Warps never wait for
// each other until the end, where their states are merged through shared memory.
//
// Lane (g = lane / 4, qd = lane % 4) holds, as mma accumulators: scores of head g for tokens
// 2qd, 2qd+1 (n-tile 0) and 8+2qd, 9+2qd (n-tile 1), and O of head g for features 8j+2qd, 8j+2qd+1.

template <int HD>
struct GqaCfg {
  static constexpr int kWarps = 4, kThreads = kWarps * 32, kStages = 3, kSub = 16;
  static constexpr int kChunks = HD / 8;  // 16-byte chunks of a row
  static constexpr int kRowBytes = HD * 2;
  static constexpr int kTileBytes = kSub * kRowBytes;  // K (or V) of a sub-tile
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kSmem = kWarps * kStages * kStageBytes;
  static constexpr int kKSteps = HD / 16;
  static constexpr int kNTiles = HD / 8;
  static constexpr int kLoads = kSub * kChunks / 32;  // 16-byte copies per lane, K (and V)
  static constexpr int kMaxGroup = 8;
  static_assert(HD == 64 || HD == 128, "GQA fast path: head_dim 64 or 128");
  static_assert(kWarps * kMaxGroup * HD * 4 + 2 * kWarps * kMaxGroup * 4 <= kSmem,
                "the final warp merge reuses the ring");
};

template <int HD>
__global__ void __launch_bounds__(GqaCfg<HD>::kThreads, 2)
    decode_gqa_kernel(const PagedDecodeArgs a, int log2_bs) {
  using C = GqaCfg<HD>;
  extern __shared__ __align__(128) uint8_t smem[];
  const PagedKv& c = a.cache;
  const int G = a.num_q_heads / c.num_kv_heads;
  int idx = blockIdx.x;
  const int kvh = idx % c.num_kv_heads;
  idx /= c.num_kv_heads;
  const int s = idx % a.max_splits, row = idx / a.max_splits;
  const int h0 = kvh * G;

  const Split sp = read_split(a, row, s);
  if (sp.kind == Split::skip) return;
  if (sp.kind == Split::fill_zero || sp.kind == Split::fill_nan) {
    fill_out_heads(a, row, h0, G, HD, sp.kind == Split::fill_nan ? NAN : 0.0f);
    return;
  }
  if (sp.kind == Split::empty) {
    write_empty_split(a, row, s, sp.num_splits, h0, G, HD);
    return;
  }

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;

  // Q as A fragments: rows g (bf16 hi) and g + 8 (bf16 lo) of head h0 + g; zero for g >= G.
  uint32_t qa[C::kKSteps][4];
  {
    const float* qrow = a.q + row * a.q_row_stride + static_cast<int64_t>(h0 + g) * HD;
#pragma unroll
    for (int ks = 0; ks < C::kKSteps; ++ks) {
      float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // features 16ks + 2qd + {0, 1, 8, 9}
      if (g < G) {
        x[0] = qrow[16 * ks + 2 * qd];
        x[1] = qrow[16 * ks + 2 * qd + 1];
        x[2] = qrow[16 * ks + 8 + 2 * qd];
        x[3] = qrow[16 * ks + 8 + 2 * qd + 1];
      }
      float hi[4], lo[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) split_bf16(x[j], hi[j], lo[j]);
      qa[ks][0] = pack2<false>(hi[0], hi[1]);
      qa[ks][1] = pack2<false>(lo[0], lo[1]);
      qa[ks][2] = pack2<false>(hi[2], hi[3]);
      qa[ks][3] = pack2<false>(lo[2], lo[3]);
    }
  }

  const int bs = 1 << log2_bs;
  const int tb0 = (sp.start >> log2_bs) << log2_bs;            // first entry of first block
  const int tb1 = (((sp.end - 1) >> log2_bs) + 1) << log2_bs;  // past the last block
  const int n_sub = static_cast<int>((tb1 - tb0 + C::kSub - 1) / C::kSub);
  const int32_t* table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
  const uint16_t* kbase = static_cast<const uint16_t*>(c.k) + kvh * c.k_stride_head;
  const uint16_t* vbase = static_cast<const uint16_t*>(c.v) + kvh * c.v_stride_head;
  uint8_t* ring = smem + warp * C::kStages * C::kStageBytes;
  const float sfac = a.scale * c.k_scale;

  // Copy K and V of sub-tile `sub` into ring stage `stage`. Lane copies chunk lane % kChunks of the
  // tokens (lane + 32 j) / kChunks: 16-byte pieces, each K row's chunks contiguous across lanes.
  auto issue = [&](int sub, int stage) {
    const int t0 = tb0 + sub * C::kSub;
    const uint32_t kdst = smem_u32(ring + stage * C::kStageBytes);
    const uint32_t vdst = kdst + C::kTileBytes;
    const int ch = lane % C::kChunks;
    if (bs >= C::kSub) {  // the sub-tile lies in one block: one table read
      const int64_t blk = __ldg(table + (t0 >> log2_bs)), e0 = t0 & (bs - 1);
      const uint16_t* ks = kbase + blk * c.k_stride_block + e0 * c.k_stride_token + ch * 8;
      const uint16_t* vs = vbase + blk * c.v_stride_block + e0 * c.v_stride_token + ch * 8;
#pragma unroll
      for (int j = 0; j < C::kLoads; ++j) {
        const int tl = (lane + 32 * j) / C::kChunks;
        cp_async16(kdst + swz(tl, ch, C::kRowBytes), ks + tl * c.k_stride_token, true);
        cp_async16(vdst + swz(tl, ch, C::kRowBytes), vs + tl * c.v_stride_token, true);
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < C::kLoads; ++j) {
      const int tl = (lane + 32 * j) / C::kChunks;
      const int tok = t0 + tl;
      const bool present = tok < tb1;  // past the split's last block: zeros, never read
      const int t = present ? tok : tb0;
      const int64_t blk = __ldg(table + (t >> log2_bs)), e = t & (bs - 1);
      const uint16_t* ks = kbase + blk * c.k_stride_block + e * c.k_stride_token + ch * 8;
      const uint16_t* vs = vbase + blk * c.v_stride_block + e * c.v_stride_token + ch * 8;
      cp_async16(kdst + swz(tl, ch, C::kRowBytes), ks, present);
      cp_async16(vdst + swz(tl, ch, C::kRowBytes), vs, present);
    }
  };

  float o[C::kNTiles][4];
#pragma unroll
  for (int j = 0; j < C::kNTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  SoftmaxState st;

#pragma unroll
  for (int p = 0; p < C::kStages - 1; ++p) {
    if (warp + p * C::kWarps < n_sub) issue(warp + p * C::kWarps, p);
    cp_async_commit();  // empty groups keep the count uniform
  }
  for (int it = 0; warp + it * C::kWarps < n_sub; ++it) {
    const int sub = warp + it * C::kWarps;
    {
      const int ahead = sub + (C::kStages - 1) * C::kWarps;
      if (ahead < n_sub) issue(ahead, (it + C::kStages - 1) % C::kStages);
      cp_async_commit();
    }
    cp_async_wait<C::kStages - 1>();
    __syncwarp();  // every lane's copies of this stage are visible to the whole warp
    const uint8_t* stage = ring + (it % C::kStages) * C::kStageBytes;
    const uint32_t ks_addr = smem_u32(stage), vs_addr = ks_addr + C::kTileBytes;
    const int t0 = tb0 + sub * C::kSub;

    // S = Q·K^T: two accumulator sets (even / odd k-steps) for independent mma chains.
    float sacc[2][2][4] = {};
#pragma unroll
    for (int ks = 0; ks < C::kKSteps; ++ks) {
      uint32_t b[4];
      const int mi = lane >> 3;
      ldsm_x4(ks_addr + swz((lane & 7) + 8 * (mi >> 1), 2 * ks + (mi & 1), C::kRowBytes), b);
      mma16816<false>(sacc[ks & 1][0], qa[ks], b[0], b[1]);
      mma16816<false>(sacc[ks & 1][1], qa[ks], b[2], b[3]);
    }
    float sc[2][2];  // [n-tile][token 2qd + j]
    float tmax = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float hi = sacc[0][nt][j] + sacc[1][nt][j];
        const float lo = sacc[0][nt][j + 2] + sacc[1][nt][j + 2];
        const int tok = t0 + 8 * nt + 2 * qd + j;
        const bool valid = tok >= sp.start && tok < sp.end;
        sc[nt][j] = valid ? (hi + lo) * sfac : -INFINITY;
        tmax = fmaxf(tmax, sc[nt][j]);
      }
    tmax = warp_max_ignore_nan(tmax, 4);  // over the quad: the 16 tokens of head g
    const float f = softmax_rescale(st, tmax);
    float p[2][2];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        p[nt][j] = (sc[nt][j] == -INFINITY) ? 0.0f : __expf(sc[nt][j] - st.m);
        st.d += p[nt][j];  // this lane's share; the quad is summed at the end
      }
#pragma unroll
    for (int j = 0; j < C::kNTiles; ++j) {
      o[j][0] *= f;
      o[j][1] *= f;
      o[j][2] *= f;
      o[j][3] *= f;
    }
    uint32_t pa[4];
    {
      float hi[2][2], lo[2][2];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int j = 0; j < 2; ++j) split_bf16(p[nt][j], hi[nt][j], lo[nt][j]);
      pa[0] = pack2<false>(hi[0][0], hi[0][1]);  // row g (hi), tokens 2qd, 2qd+1
      pa[1] = pack2<false>(lo[0][0], lo[0][1]);  // row g+8 (lo)
      pa[2] = pack2<false>(hi[1][0], hi[1][1]);  // row g, tokens 8+2qd, 9+2qd
      pa[3] = pack2<false>(lo[1][0], lo[1][1]);
    }
    // O += P·V over all 16 entries (the whole tile: p = 0 rows still multiply V).
#pragma unroll
    for (int np = 0; np < C::kNTiles / 2; ++np) {
      uint32_t b[4];
      const int mi = lane >> 3;
      ldsm_x4_trans(vs_addr + swz((lane & 7) + 8 * (mi & 1), 2 * np + (mi >> 1), C::kRowBytes), b);
      mma16816<false>(o[2 * np], pa, b[0], b[1]);
      mma16816<false>(o[2 * np + 1], pa, b[2], b[3]);
    }
    __syncwarp();  // all lanes are done with this stage before it is refilled
  }

  // Merge the 4 warp states of this split through shared memory (the ring is idle now).
  cp_async_wait<0>();
  __syncthreads();
  float* sm_o = reinterpret_cast<float*>(smem);                  // [warp][8][HD]
  float* sm_m = sm_o + C::kWarps * C::kMaxGroup * HD;             // [warp][8]
  float* sm_d = sm_m + C::kWarps * C::kMaxGroup;                  // [warp][8]
  float d = st.d;
  d += __shfl_xor_sync(0xffffffffu, d, 1);
  d += __shfl_xor_sync(0xffffffffu, d, 2);
  if (qd == 0) {
    sm_m[warp * C::kMaxGroup + g] = st.m;
    sm_d[warp * C::kMaxGroup + g] = d;
  }
  float* my_o = sm_o + (warp * C::kMaxGroup + g) * HD;
#pragma unroll
  for (int j = 0; j < C::kNTiles; ++j) {
    my_o[8 * j + 2 * qd] = o[j][0] + o[j][2];  // hi rows + lo rows
    my_o[8 * j + 2 * qd + 1] = o[j][1] + o[j][3];
  }
  __syncthreads();
  for (int x = threadIdx.x; x < G * HD; x += blockDim.x) {
    const int gh = x / HD, i = x % HD;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < C::kWarps; ++w) m = fmaxf(m, sm_m[w * C::kMaxGroup + gh]);
    float dsum = 0.0f, osum = 0.0f;
#pragma unroll
    for (int w = 0; w < C::kWarps; ++w) {
      const float mw = sm_m[w * C::kMaxGroup + gh];
      // A warp that saw only masked entries (m = -inf) weighs 0, but 0 x its NaN stays NaN.
      const float wgt = (mw == -INFINITY) ? 0.0f : expf(mw - m);
      dsum += sm_d[w * C::kMaxGroup + gh] * wgt;
      osum += sm_o[(w * C::kMaxGroup + gh) * HD + i] * wgt;
    }
    SoftmaxState merged;
    merged.m = m;
    merged.d = dsum;
    const float lse = softmax_lse(merged);
    const StateSink k = state_sink(a, row, s, sp.num_splits, h0 + gh, HD, lse);
    osum *= c.v_scale;
    k.put(i, dsum != 0.0f ? osum / dsum : osum);
    if (i == 0) k.put_lse(lse);
  }
}

// =================================================================================================
// MLA path: head_dim 576 (512 latent + 64 rope), v_dim 512, bf16 or fp8 cache, tensor cores
// =================================================================================================
//
// 128 q heads share every latent row: 278k flops per 1152-byte bf16 row, 242 flops/byte, above
// what an H100/H200 moves per flop — MLA decode is matrix-bound, so operands are single bf16 (the
// hi/lo trick of the GQA path would double the matrix work) and the tile is as large as shared
// memory allows. O of 64 heads x 512 features in float is 128 KB, half a register file, so a CTA
// takes 64 q heads and the two CTAs of a 128-head row read the same tiles back to back (adjacent
// block indices: the second read hits L2).
//
// CTA = (row, split, kv head, 64-head block), 8 warps. Shared memory: Q (64 x 576, 16-bit), two
// 64-token K tiles (fp8: one converted f16 tile + two raw fp8 stages), P (64 x 64), row maxima.
// Per tile: S = Q·K^T with warp (hp = w & 1: heads 32hp..+31, tq = w >> 1: tokens 16tq..+15),
// tile max exchanged through shared memory, P to shared memory, then O += P·V with warp (hp, fq =
// w >> 1: features 128fq..+127) — the same heads, so a lane keeps its heads' softmax state.
//
// fp8: e4m3 converts exactly to f16; q is scaled per head by 2^e (max|q| to [2^13, 2^14)) so that
// it fits f16's range with 11 significant bits, and 2^-e goes into the score factor.

template <bool kFp8>
struct MlaCfg {
  static constexpr int HD = 576, VD = 512, kHeads = 64, kTile = 64, kThreads = 256;
  static constexpr int kChunks = HD / 8;                // 72 16-byte chunks of a 16-bit row
  static constexpr int kRowBytes = HD * 2;              // 1152
  static constexpr int kTileBytes = kTile * kRowBytes;  // 73728
  static constexpr int kRawChunks = HD / 16;            // 36 16-byte chunks of an fp8 row (fp8)
  static constexpr int kRawTileBytes = kTile * HD;      // 36864
  static constexpr int kPRowBytes = kTile * 2;          // 128
  static constexpr int kOffQ = 0;
  static constexpr int kOffKV = kOffQ + kHeads * kRowBytes;
  static constexpr int kOffRaw = kOffKV + (kFp8 ? 1 : 2) * kTileBytes;
  static constexpr int kOffP = kOffRaw + (kFp8 ? 2 * kRawTileBytes : 0);
  static constexpr int kOffRed = kOffP + kHeads * kPRowBytes;  // float [4][64]
  static constexpr int kOffQf = kOffRed + 4 * kHeads * 4;      // float [64]
  static constexpr int kOffMeta = kOffQf + kHeads * 4;        // int [4]: row, split, splits, h0
  static constexpr int kSmem = kOffMeta + 16;
  static constexpr int kKSteps = HD / 16;  // 36
  static_assert(kRawChunks * 16 == HD && kChunks * 8 == HD, "whole 16-byte chunks per row");
  static_assert(kSmem <= 232448, "MLA path needs the 227 KB shared-memory opt-in of sm_90");
};

template <bool kFp8>
__global__ void __launch_bounds__(256, 1)
    decode_mla_kernel(const PagedDecodeArgs a, int log2_bs) {
  using C = MlaCfg<kFp8>;
  constexpr int HD = C::HD, VD = C::VD;
  extern __shared__ __align__(128) uint8_t smem[];
  const PagedKv& c = a.cache;
  const int G = a.num_q_heads / c.num_kv_heads;
  const int nhb = (G + C::kHeads - 1) / C::kHeads;
  int idx = blockIdx.x;
  const int hb = idx % nhb;
  idx /= nhb;
  const int kvh = idx % c.num_kv_heads;
  idx /= c.num_kv_heads;
  const int s = idx % a.max_splits, row = idx / a.max_splits;
  const int h0 = kvh * G + hb * C::kHeads;                    // q head of local row 0
  const int nh = min(C::kHeads, G - hb * C::kHeads);          // real heads of this CTA

  const Split sp = read_split(a, row, s);
  if (sp.kind == Split::skip) return;
  if (sp.kind == Split::fill_zero || sp.kind == Split::fill_nan) {
    fill_out_heads(a, row, h0, nh, VD, sp.kind == Split::fill_nan ? NAN : 0.0f);
    return;
  }
  if (sp.kind == Split::empty) {
    write_empty_split(a, row, s, sp.num_splits, h0, nh, VD);
    return;
  }

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, qd = lane & 3;
  const int hp = warp & 1, tq = warp >> 1, fq = warp >> 1;
  uint8_t* sQ = smem + C::kOffQ;
  uint8_t* sKV = smem + C::kOffKV;
  uint8_t* sRaw = smem + C::kOffRaw;
  uint8_t* sP = smem + C::kOffP;
  float* sRed = reinterpret_cast<float*>(smem + C::kOffRed);
  float* sQf = reinterpret_cast<float*>(smem + C::kOffQf);
  int* sMeta = reinterpret_cast<int*>(smem + C::kOffMeta);
  const float* qrow = a.q + row * a.q_row_stride;
  // What only the final write needs goes to shared memory rather than staying live in registers
  // across the tile loop (which needs all 255 of them).
  if (tid == 0) {
    sMeta[0] = row;
    sMeta[1] = s;
    sMeta[2] = sp.num_splits;
    sMeta[3] = h0;
  }

  // ---- Q to shared memory, 16-bit, once per CTA ----
  if constexpr (kFp8) {
    for (int i = warp; i < C::kHeads; i += 8) {  // per-head power-of-two scale
      float mx = 0.0f;
      if (i < nh)
        for (int f = lane; f < HD; f += 32) mx = fmaxf(mx, fabsf(qrow[(h0 + i) * HD + f]));
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      int e = 0;
      if (mx > 0.0f && isfinite(mx)) {
        int ex;
        frexpf(mx, &ex);  // mx in [2^(ex-1), 2^ex)
        e = min(max(14 - ex, -126), 126);
      }
      if (lane == 0) {
        sRed[i] = ldexpf(1.0f, e);                        // q multiplier, used just below
        sQf[i] = a.scale * c.k_scale * ldexpf(1.0f, -e);  // score factor
      }
    }
  } else {
    for (int i = tid; i < C::kHeads; i += C::kThreads) sQf[i] = a.scale * c.k_scale;
  }
  __syncthreads();
  for (int x = tid; x < C::kHeads * C::kChunks; x += C::kThreads) {
    const int i = x / C::kChunks, ch = x % C::kChunks;
    uint32_t w[4] = {0u, 0u, 0u, 0u};
    if (i < nh) {
      const float* src = qrow + static_cast<int64_t>(h0 + i) * HD + ch * 8;
      const float mul = kFp8 ? sRed[i] : 1.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) w[j] = pack2<kFp8>(src[2 * j] * mul, src[2 * j + 1] * mul);
    }
    *reinterpret_cast<uint4*>(sQ + swz(i, ch, C::kRowBytes)) = make_uint4(w[0], w[1], w[2], w[3]);
  }

  const int bs = 1 << log2_bs;
  const int tb0 = (sp.start >> log2_bs) << log2_bs;
  const int tb1 = (((sp.end - 1) >> log2_bs) + 1) << log2_bs;
  const int n_tiles = static_cast<int>((tb1 - tb0 + C::kTile - 1) / C::kTile);
  const int32_t* table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
  const uint8_t* kbase =
      static_cast<const uint8_t*>(c.k) + static_cast<int64_t>(kvh) * c.k_stride_head * (kFp8 ? 1 : 2);
  const int64_t esz = kFp8 ? 1 : 2;

  // Thread t copies tokens t/8 and t/8 + 32 of the tile, chunks t%8 + 8j: eight threads cover 128
  // contiguous bytes of a row, so each warp-wide copy touches 4 whole 128-byte lines.
  auto issue = [&](int tile, int stage) {
    const int tbase = tb0 + tile * C::kTile;
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int tl = tid / 8 + 32 * pass;
      const int tok = tbase + tl;
      const bool present = tok < tb1;
      const int t = present ? tok : tb0;
      const int64_t blk = __ldg(table + (t >> log2_bs)), e = t & (bs - 1);
      const uint8_t* src = kbase + (blk * c.k_stride_block + e * c.k_stride_token) * esz;
      if constexpr (kFp8) {
        const uint32_t dst = smem_u32(sRaw + stage * C::kRawTileBytes + tl * HD);
#pragma unroll
        for (int j = 0; j < 5; ++j) {
          const int ch = tid % 8 + 8 * j;
          if (ch < C::kRawChunks) cp_async16(dst + ch * 16, src + ch * 16, present);
        }
      } else {
        const uint32_t dst = smem_u32(sKV + stage * C::kTileBytes);
#pragma unroll
        for (int j = 0; j < 9; ++j) {
          const int ch = tid % 8 + 8 * j;
          cp_async16(dst + swz(tl, ch, C::kRowBytes), src + ch * 16, present);
        }
      }
    }
  };

  // Per-lane state for its four heads: (mt, half) -> local head 32hp + 16mt + g + 8half.
  float m_run[2][2], d_run[2][2], fac[2][2];
  float o[2][16][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      m_run[mt][hh] = -INFINITY;
      d_run[mt][hh] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
  }
  __syncthreads();  // sQ, sQf ready

  const uint32_t q_addr = smem_u32(sQ), p_addr = smem_u32(sP);
  issue(0, 0);
  cp_async_commit();
  for (int it = 0; it < n_tiles; ++it) {
    cp_async_wait<0>();
    __syncthreads();  // tile `it` landed for everyone; everyone is done with tile it-1
    if (it + 1 < n_tiles) issue(it + 1, (it + 1) & 1);
    cp_async_commit();
    uint32_t kv_addr;
    if constexpr (kFp8) {
      // Raw e4m3 -> f16 tile (exact). Thread t: row x / 36, 16-byte raw chunk x % 36.
      const uint8_t* raw = sRaw + (it & 1) * C::kRawTileBytes;
#pragma unroll 1
      for (int x = tid; x < C::kTile * C::kRawChunks; x += C::kThreads) {
        const int r = x / C::kRawChunks, ch = x % C::kRawChunks;
        const uint4 v = *reinterpret_cast<const uint4*>(raw + r * HD + ch * 16);
        const uint32_t in[4] = {v.x, v.y, v.z, v.w};
        uint32_t outw[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(
              static_cast<__nv_fp8x2_storage_t>(in[j] & 0xffffu), __NV_E4M3);
          const __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(
              static_cast<__nv_fp8x2_storage_t>(in[j] >> 16), __NV_E4M3);
          outw[2 * j] = static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(lo.y) << 16);
          outw[2 * j + 1] = static_cast<uint32_t>(hi.x) | (static_cast<uint32_t>(hi.y) << 16);
        }
        // Lanes 4-7 of each 8-lane phase store their second chunk first: the phase's eight
        // 16-byte stores then fall in eight different bank groups.
        const int first = (tid >> 2) & 1;
        const uint4 c0 = make_uint4(outw[0], outw[1], outw[2], outw[3]);
        const uint4 c1 = make_uint4(outw[4], outw[5], outw[6], outw[7]);
        *reinterpret_cast<uint4*>(sKV + swz(r, 2 * ch + first, C::kRowBytes)) = first ? c1 : c0;
        *reinterpret_cast<uint4*>(sKV + swz(r, 2 * ch + 1 - first, C::kRowBytes)) = first ? c0 : c1;
      }
      __syncthreads();
      kv_addr = smem_u32(sKV);
    } else {
      kv_addr = smem_u32(sKV + (it & 1) * C::kTileBytes);
    }
    const int tile_tok = tb0 + it * C::kTile;

    // ---- S = Q·K^T: warp (hp, tq), 32 heads x 16 tokens ----
    float sacc[2][2][4] = {};
#pragma unroll 2
    for (int ks = 0; ks < C::kKSteps; ++ks) {
      const int mi = lane >> 3;
      uint32_t a0[4], a1[4], b[4];
      ldsm_x4(q_addr + swz(32 * hp + (lane & 7) + 8 * (mi & 1), 2 * ks + (mi >> 1), C::kRowBytes),
              a0);
      ldsm_x4(q_addr +
                  swz(32 * hp + 16 + (lane & 7) + 8 * (mi & 1), 2 * ks + (mi >> 1), C::kRowBytes),
              a1);
      ldsm_x4(kv_addr + swz(16 * tq + (lane & 7) + 8 * (mi >> 1), 2 * ks + (mi & 1), C::kRowBytes),
              b);
      mma16816<kFp8>(sacc[0][0], a0, b[0], b[1]);
      mma16816<kFp8>(sacc[0][1], a0, b[2], b[3]);
      mma16816<kFp8>(sacc[1][0], a1, b[0], b[1]);
      mma16816<kFp8>(sacc[1][1], a1, b[2], b[3]);
    }
    // Scores, masked by selection; the row max of this warp's 16 tokens.
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float mx = -INFINITY;
        const float qf = sQf[32 * hp + 16 * mt + g + 8 * hh];  // shared: saves 4 registers
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int tok = tile_tok + 16 * tq + 8 * nt + 2 * qd + j;
            const bool valid = tok >= sp.start && tok < sp.end;
            float& sv = sacc[mt][nt][2 * hh + j];
            sv = valid ? sv * qf : -INFINITY;
            mx = fmaxf(mx, sv);
          }
        mx = warp_max_ignore_nan(mx, 4);
        if (qd == 0) sRed[tq * C::kHeads + 32 * hp + 16 * mt + g + 8 * hh] = mx;
      }
    __syncthreads();
    // Softmax bookkeeping (identical in the four warps that share these heads), P to shared.
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int hl = 32 * hp + 16 * mt + g + 8 * hh;
        float tmax = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; ++w) tmax = fmaxf(tmax, sRed[w * C::kHeads + hl]);
        SoftmaxState stt;
        stt.m = m_run[mt][hh];
        stt.d = d_run[mt][hh];
        fac[mt][hh] = softmax_rescale(stt, tmax);
        m_run[mt][hh] = stt.m;
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          float pv[2];
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float sv = sacc[mt][nt][2 * hh + j];
            pv[j] = (sv == -INFINITY) ? 0.0f : __expf(sv - stt.m);
            stt.d += pv[j];
          }
          const int tl = 16 * tq + 8 * nt + 2 * qd;  // token (column) of pv[0]
          *reinterpret_cast<uint32_t*>(sP + hl * C::kPRowBytes + (((tl >> 3) ^ (hl & 7)) << 4) +
                                       (tl & 7) * 2) = pack2<kFp8>(pv[0], pv[1]);
        }
        d_run[mt][hh] = stt.d;
      }
    __syncthreads();
    // ---- O += P·V: warp (hp, fq), 32 heads x 128 features, over all 64 entries ----
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        o[mt][j][0] *= fac[mt][0];
        o[mt][j][1] *= fac[mt][0];
        o[mt][j][2] *= fac[mt][1];
        o[mt][j][3] *= fac[mt][1];
      }
#pragma unroll
    for (int kk = 0; kk < C::kTile / 16; ++kk) {
      const int mi = lane >> 3;
      uint32_t pa0[4], pa1[4];
      ldsm_x4(p_addr + swz(32 * hp + (lane & 7) + 8 * (mi & 1), 2 * kk + (mi >> 1), C::kPRowBytes),
              pa0);
      ldsm_x4(p_addr +
                  swz(32 * hp + 16 + (lane & 7) + 8 * (mi & 1), 2 * kk + (mi >> 1), C::kPRowBytes),
              pa1);
#pragma unroll
      for (int np = 0; np < 8; ++np) {
        uint32_t b[4];
        ldsm_x4_trans(kv_addr + swz(16 * kk + (lane & 7) + 8 * (mi & 1), 16 * fq + 2 * np + (mi >> 1),
                                    C::kRowBytes),
                      b);
        mma16816<kFp8>(o[0][2 * np], pa0, b[0], b[1]);
        mma16816<kFp8>(o[0][2 * np + 1], pa0, b[2], b[3]);
        mma16816<kFp8>(o[1][2 * np], pa1, b[0], b[1]);
        mma16816<kFp8>(o[1][2 * np + 1], pa1, b[2], b[3]);
      }
    }
  }

  // ---- finish: sum the four token-slices' d, normalise, write ----
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float d = d_run[mt][hh];
      d += __shfl_xor_sync(0xffffffffu, d, 1);
      d += __shfl_xor_sync(0xffffffffu, d, 2);
      if (qd == 0) sRed[tq * C::kHeads + 32 * hp + 16 * mt + g + 8 * hh] = d;
    }
  __syncthreads();  // (every warp finished reading sRed's maxima before the last P barrier)
  const int f_row = sMeta[0], f_s = sMeta[1], f_ns = sMeta[2], f_h0 = sMeta[3];
  const int f_nh = min(C::kHeads, G - (f_h0 - (f_h0 / G) * G));
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int hl = 32 * hp + 16 * mt + g + 8 * hh;
      if (hl >= f_nh) continue;
      SoftmaxState fin;
      fin.m = m_run[mt][hh];
      fin.d = sRed[hl] + sRed[C::kHeads + hl] + sRed[2 * C::kHeads + hl] + sRed[3 * C::kHeads + hl];
      const float lse = softmax_lse(fin);
      const StateSink k = state_sink(a, f_row, f_s, f_ns, f_h0 + hl, VD, lse);
#pragma unroll
      for (int nt = 0; nt < 16; ++nt)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float v = o[mt][nt][2 * hh + j] * c.v_scale;
          k.put(128 * fq + 8 * nt + 2 * qd + j, fin.d != 0.0f ? v / fin.d : v);
        }
      if (fq == 0 && qd == 0) k.put_lse(lse);
    }
}

// =================================================================================================
// Launchers
// =================================================================================================

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw DeviceError(std::string("cuda paged_decode: ") + what + " launch failed: " +
                      cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

constexpr int kMaxDevices = 64;

int current_device() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) (void)cudaGetLastError();
  return dev >= 0 && dev < kMaxDevices ? dev : 0;
}

// The opt-in shared memory per block of the current device, read once per device.
int device_smem_optin() {
  static std::atomic<int> cached[kMaxDevices] = {};
  const int dev = current_device();
  int v = cached[dev].load(std::memory_order_relaxed);
  if (v > 0) return v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 48 * 1024;
  }
  cached[dev].store(v, std::memory_order_relaxed);
  return v;
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
int log2_of(int64_t x) {
  int l = 0;
  while ((int64_t{1} << l) < x) ++l;
  return l;
}
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

int v_dim_of(const PagedDecodeArgs& a) { return a.v_dim == 0 ? a.cache.head_dim : a.v_dim; }

// Raises kernel K's dynamic shared-memory limit to at least `bytes` on the current device, once
// per device and size (a function attribute, not a stream operation: legal while a graph is being
// captured).
template <auto K>
void allow_smem(int bytes) {
  if (bytes <= 48 * 1024) return;
  static std::atomic<int> granted[kMaxDevices] = {};
  std::atomic<int>& g = granted[current_device()];
  if (g.load(std::memory_order_relaxed) >= bytes) return;
  if (cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    throw DeviceError(std::string("cuda paged_decode: cannot raise shared memory to ") +
                      std::to_string(bytes) + " bytes: " + cudaGetErrorString(e));
  }
  g.store(bytes, std::memory_order_relaxed);
}

bool cache_aligned16(const PagedKv& c, bool check_v) {
  const int64_t es = dtype_size(c.dtype);
  auto ok = [&](const void* p, int64_t sb, int64_t st, int64_t sh) {
    return aligned16(p) && (sb * es) % 16 == 0 && (st * es) % 16 == 0 && (sh * es) % 16 == 0;
  };
  return ok(c.k, c.k_stride_block, c.k_stride_token, c.k_stride_head) &&
         (!check_v || ok(c.v, c.v_stride_block, c.v_stride_token, c.v_stride_head));
}

bool gqa_ok(const PagedDecodeArgs& a, std::string* why) {
  const PagedKv& c = a.cache;
  auto no = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (c.dtype != DType::bf16) return no("cache dtype is not bf16");
  if (c.head_dim != 64 && c.head_dim != 128) return no("head_dim is not 64 or 128");
  if (v_dim_of(a) != c.head_dim) return no("v_dim differs from head_dim");
  if (a.num_q_heads / c.num_kv_heads > GqaCfg<128>::kMaxGroup) return no("more than 8 q heads per kv head");
  if (!is_pow2(c.block_size)) return no("block size is not a power of two");
  if (!cache_aligned16(c, true)) return no("cache pointers/strides are not 16-byte aligned");
  const int need = c.head_dim == 128 ? GqaCfg<128>::kSmem : GqaCfg<64>::kSmem;
  if (device_smem_optin() < need) return no("device shared memory too small");
  return true;
}

bool mla_ok(const PagedDecodeArgs& a, std::string* why) {
  const PagedKv& c = a.cache;
  auto no = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (c.dtype != DType::bf16 && c.dtype != DType::fp8_e4m3) return no("cache dtype is not bf16/fp8");
  if (c.head_dim != 576 || v_dim_of(a) != 512) return no("not head_dim 576 with v_dim 512");
  if (c.v != c.k || c.v_stride_block != c.k_stride_block || c.v_stride_token != c.k_stride_token ||
      c.v_stride_head != c.k_stride_head)
    return no("V is not the latent K (cache.v != cache.k or different strides)");
  if (!is_pow2(c.block_size)) return no("block size is not a power of two");
  if (!cache_aligned16(c, false)) return no("cache pointer/strides are not 16-byte aligned");
  if (device_smem_optin() < MlaCfg<false>::kSmem) return no("device shared memory below 227 KB");
  return true;
}

void validate(const PagedDecodeArgs& a) {
  const PagedKv& c = a.cache;
  const int vd = v_dim_of(a);
  auto bad = [](const std::string& m) { throw std::invalid_argument("cuda paged_decode: " + m); };
  if (vd < 1 || vd > c.head_dim)
    bad("v_dim " + std::to_string(a.v_dim) + " is neither 0 nor in [1, head_dim " +
        std::to_string(c.head_dim) + "]");
  if (c.head_dim < 1 || c.block_size < 1 || c.num_kv_heads < 1 || a.num_q_heads < 1 ||
      a.max_splits < 1)
    bad("head_dim, block_size, num_kv_heads, num_q_heads and max_splits must be positive");
  if (a.num_q_heads % c.num_kv_heads != 0)
    bad("num_q_heads " + std::to_string(a.num_q_heads) + " is not a multiple of num_kv_heads " +
        std::to_string(c.num_kv_heads));
  if (vd > kMaxHeadDim) bad("v_dim above " + std::to_string(kMaxHeadDim) + " is not supported");
}

void launch_generic(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int vd = v_dim_of(a);
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.max_splits * a.num_q_heads;
  const int smem = (a.cache.head_dim + a.cache.block_size) * static_cast<int>(sizeof(float));
  if (smem > device_smem_optin())
    throw std::invalid_argument("cuda paged_decode: head_dim + block_size too large for the generic path");
  allow_smem<decode_generic_kernel>(smem);
  decode_generic_kernel<<<static_cast<unsigned>(ctas), kGenericThreads, smem, stream>>>(a, vd);
  check_launch("decode_generic_kernel");
}

void launch_gqa(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.max_splits * a.cache.num_kv_heads;
  const int l2 = log2_of(a.cache.block_size);
  if (a.cache.head_dim == 128) {
    allow_smem<decode_gqa_kernel<128>>(GqaCfg<128>::kSmem);
    decode_gqa_kernel<128><<<static_cast<unsigned>(ctas), GqaCfg<128>::kThreads, GqaCfg<128>::kSmem,
                             stream>>>(a, l2);
  } else {
    allow_smem<decode_gqa_kernel<64>>(GqaCfg<64>::kSmem);
    decode_gqa_kernel<64><<<static_cast<unsigned>(ctas), GqaCfg<64>::kThreads, GqaCfg<64>::kSmem,
                            stream>>>(a, l2);
  }
  check_launch("decode_gqa_kernel");
}

void launch_mla(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int G = a.num_q_heads / a.cache.num_kv_heads;
  const int64_t nhb = (G + 63) / 64;
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.max_splits * a.cache.num_kv_heads * nhb;
  const int l2 = log2_of(a.cache.block_size);
  if (a.cache.dtype == DType::fp8_e4m3) {
    allow_smem<decode_mla_kernel<true>>(MlaCfg<true>::kSmem);
    decode_mla_kernel<true><<<static_cast<unsigned>(ctas), 256, MlaCfg<true>::kSmem, stream>>>(a, l2);
  } else {
    allow_smem<decode_mla_kernel<false>>(MlaCfg<false>::kSmem);
    decode_mla_kernel<false><<<static_cast<unsigned>(ctas), 256, MlaCfg<false>::kSmem, stream>>>(a, l2);
  }
  check_launch("decode_mla_kernel");
}

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

DecodePath env_default_path() {
  static const DecodePath p = [] {
    const char* e = std::getenv("KVCHECK_DECODE_PATH");
    return (e && std::strcmp(e, "generic") == 0) ? DecodePath::generic : DecodePath::automatic;
  }();
  return p;
}

}  // namespace

const char* decode_path_name(DecodePath p) {
  switch (p) {
    case DecodePath::automatic: return "automatic";
    case DecodePath::generic: return "generic";
    case DecodePath::gqa_tc: return "gqa_tc";
    case DecodePath::mla_tc: return "mla_tc";
  }
  return "?";
}

bool decode_path_supports(const PagedDecodeArgs& a, DecodePath p, std::string* why) {
  switch (p) {
    case DecodePath::automatic:
    case DecodePath::generic: return true;
    case DecodePath::gqa_tc: return gqa_ok(a, why);
    case DecodePath::mla_tc: return mla_ok(a, why);
  }
  return false;
}

DecodePath decode_path_for(const PagedDecodeArgs& a) {
  if (mla_ok(a, nullptr)) return DecodePath::mla_tc;
  if (gqa_ok(a, nullptr)) return DecodePath::gqa_tc;
  return DecodePath::generic;
}

void paged_decode_path(const PagedDecodeArgs& a, DecodePath path, cudaStream_t stream) {
  validate(a);
  if (a.num_rows <= 0) return;
  const int64_t worst = static_cast<int64_t>(a.num_rows) * a.max_splits * a.num_q_heads;
  if (worst > 0x7fffffff) throw std::invalid_argument("cuda paged_decode: grid too large");
  if (path == DecodePath::automatic) path = decode_path_for(a);
  std::string why;
  if (!decode_path_supports(a, path, &why))
    throw std::invalid_argument(std::string("cuda paged_decode: path ") + decode_path_name(path) +
                                " cannot run this descriptor: " + why);
  switch (path) {
    case DecodePath::gqa_tc: launch_gqa(a, stream); break;
    case DecodePath::mla_tc: launch_mla(a, stream); break;
    default: launch_generic(a, stream); break;
  }
  launch_merge(a, stream);
}

void paged_decode(const PagedDecodeArgs& a, cudaStream_t stream) {
  paged_decode_path(a, env_default_path(), stream);
}

}  // namespace kv::cuda
