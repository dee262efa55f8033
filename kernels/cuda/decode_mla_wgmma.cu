// decode_mla_wgmma.cu — CUDA paged decode, mla_wgmma path: MLA (head_dim 576 = 512 latent + 64
// rope, v_dim 512, cache.v == cache.k, bf16 or fp8_e4m3 cache) on warpgroup MMAs (wgmma), the
// FlashMLA structure. sm_90a only: wgmma does not exist in sm_90 (or any other) code.
//
// Reference: kernels/host/paged_decode.cpp (the spec). Split plan, masking and NaN rules shared by
// every path: the header comment of kernels/cuda/paged_decode.cu; byte/flop floors: results/
// decode-bench.md. Tile layouts, descriptors and GEMM chains: kernels/cuda/mla_wgmma_tiles.cuh,
// checked on a GPU by tests/bench/wgmma_probe.cu. Built into kv_cuda by the top-level CMakeLists as
// its own object library, for sm_90a whatever CMAKE_CUDA_ARCHITECTURES says; alone:
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I. -Isrc -Xptxas -v -c kernels/cuda/decode_mla_wgmma.cu
// Built for anything but sm_90a the kernel body is compiled out and mla_wgmma_ok says no.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/decode_common.cuh"
#include "kernels/cuda/decode_launchers.h"
#include "kernels/cuda/mla_wgmma_tiles.cuh"

namespace kv::cuda::decode_detail {
namespace {

// 1 in a device image compiled for sm_90a, 0 in any other (and in the host's shadow copy). The
// predicate reads it from the image the runtime loaded for the current GPU: that image is also the
// one the kernel below comes from.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KV_MLA_WGMMA_IMAGE 1
#else
#define KV_MLA_WGMMA_IMAGE 0
#endif
__device__ int g_mla_wgmma_image = KV_MLA_WGMMA_IMAGE;

// =================================================================================================
// GPU kernel
// =================================================================================================
//
// Why wgmma: 128 q heads share every latent row, 278 kflop per 1152-byte bf16 row, so MLA decode
// is matrix-bound; mma.sync (the mla_tc path) runs at about half of wgmma's rate on Hopper.
//
// CTA = (row, split, kv head, 64-head block), as mla_tc: the two CTAs of a 128-head row read the
// same tiles back to back (the second read hits L2). 256 threads = two warpgroups:
//   WG0: S = Q·K^T (36 x m64n64k16, Q and K from shared memory), the online softmax on the
//        accumulators (a warp owns 16 whole rows: no cross-warp reduction), P to shared memory for
//        WG1, then O[:, 0:256] += P·V (4 x m64n256k16, P from its registers, V MN-major);
//   WG1: the loader (cp.async of the next tile while WG0 computes this one), then O[:, 256:512] +=
//        P·V with P from shared memory.
// Each warpgroup owns 64 heads x 256 features of O: 128 float registers per thread.
//
// Shared memory (bf16; tiles 1024-byte aligned, layout of mla_wgmma_tiles.cuh):
//   Q 72 KB | K tile 0 72 KB | K tile 1 72 KB | P 8 KB | rescale, row max, row sum, q factors.
// fp8: Q | one 16-bit K tile | two raw e4m3 stages of 36 KB | P ...: cp.async fills the raw stages
// two tiles ahead, all 256 threads convert a stage into the 16-bit tile (e4m3 -> f16 is exact) when
// the previous tile is done with it. fp8 runs on f16 operands (q scaled per head by a power of two,
// as in mla_tc), so it does the same matrix work per token as bf16 for half the bytes: it cannot
// be faster per token than bf16, and the conversion is not overlapped with the MMAs.
//
// bf16 pipeline, tile t in buffer t % 2, named barriers (producer arrives, consumer syncs, 256):
//   KFull     WG1 -> WG0   tile t is in shared memory (cp.async waited, proxy-fenced); WG1
//                          signals t + 1 while its P·V(t) still runs, so WG0 goes on at once;
//   PFull     WG0 -> WG1   P(t) and its row rescale factors are in shared memory;
//   PEmpty    WG1 -> WG0   WG1's P·V(t) is done: P may be overwritten;
//   KFree[2]  WG0 -> WG1   WG0's P·V(t) is done: buffer t % 2 may be refilled with tile t + 2
//                          (two ids by parity: WG0 could otherwise arrive for t + 1 before WG1 has
//                          waited for t).
// Tile t + 2 is loaded while WG0 computes tile t + 1. Every barrier has at most one arrival phase
// outstanding by construction (argued per barrier in the loops below).
//
// What the host does and this keeps: scores of entries outside [start, end) are -inf (their K never
// matters), P·V runs over every entry of every block the split touches (p = 0 times a stale NaN in
// V is NaN), rows of a 64-token tile past the split's last block (block size < 64) are zero-filled
// and masked. Scores are kept in log2 units (x = q·k * scale * log2 e, p = 2^(x - m)): the same
// softmax, m converted back to natural units for the lse.

template <bool kFp8>
struct WgmmaCfg {
  static constexpr int HD = 576, VD = 512, kHeads = 64, kTile = 64, kThreads = 256;
  static constexpr int kTileBytes = (HD / 64) * kKBlockBytes;  // 73728: a 64-row 16-bit tile
  static constexpr int kRawTileBytes = kTile * HD;             // 36864
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kTileBytes;
  static constexpr int kOffRaw = kOffK + (kFp8 ? 1 : 2) * kTileBytes;
  static constexpr int kOffP = kOffRaw + (kFp8 ? 2 * kRawTileBytes : 0);
  static constexpr int kOffScale = kOffP + kKBlockBytes;   // float[64]: rescale of O for P's rows
  static constexpr int kOffRowM = kOffScale + 4 * kHeads;  // float[64]: final max (log2 units)
  static constexpr int kOffRowD = kOffRowM + 4 * kHeads;   // float[64]: final sum
  static constexpr int kOffQf = kOffRowD + 4 * kHeads;     // float[64]: score factor (log2 units)
  static constexpr int kOffQmul = kOffQf + 4 * kHeads;     // float[64]: q multiplier (fp8)
  static constexpr int kSmem = kOffQmul + 4 * kHeads + 1024;  // + aligning the base to 1024
  static_assert(kOffK % 1024 == 0 && kOffRaw % 1024 == 0 && kOffP % 1024 == 0, "1024-byte tiles");
  static_assert(kSmem <= 232448, "needs the 227 KB shared-memory opt-in of sm_90");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

enum NamedBarrier : int { kBarKFull = 1, kBarPFull = 2, kBarPEmpty = 3, kBarKFree = 4 /* and 5 */ };
constexpr int kBarThreads = 256;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

// KV_MLA_WGMMA_SYNC_HANDOFFS (a diagnostic build, off by default): every producer-side
// `bar.arrive` of the bf16 pipeline becomes a `bar.sync`, and WG1 takes KFree before KFull(t + 1)
// so that the all-sync order cannot deadlock. compute-sanitizer racecheck does not model ordering
// through `bar.arrive` (tests/bench/racecheck_probe.cu shows it on a minimal ping-pong); this
// build lets it check the same data flow with orderings it does model (results/sanitizer.md).
#ifndef KV_MLA_WGMMA_SYNC_HANDOFFS
#define KV_MLA_WGMMA_SYNC_HANDOFFS 0
#endif
__device__ __forceinline__ void handoff(int id) {
  if constexpr (KV_MLA_WGMMA_SYNC_HANDOFFS) {
    named_sync(id, kBarThreads);
  } else {
    named_arrive(id, kBarThreads);
  }
}

// Where the cache rows of a split's tiles are: tiles of 64 tokens from tb0, the first entry of the
// split's first block, up to tb1, one past the last entry of its last block.
struct TileSrc {
  const uint8_t* base;  // element (block 0, entry 0, kv head, feature 0)
  const int32_t* table;
  int64_t stride_block, stride_token;  // bytes
  int tb0, tb1, log2_bs;
  // Source of token row `rr` of tile `t`, and whether it exists (false: past tb1, zero-fill; the
  // address is then that of entry tb0, a valid one).
  __device__ __forceinline__ const uint8_t* row(int t, int rr, bool& present) const {
    const int tok = tb0 + t * 64 + rr;
    present = tok < tb1;
    const int e = present ? tok : tb0;
    const int64_t blk = __ldg(table + (e >> log2_bs));
    return base + blk * stride_block +
           static_cast<int64_t>(e & ((1 << log2_bs) - 1)) * stride_token;
  }
};

// bf16: tile t into the 16-bit tile at `dst`, by the 128 threads of WG1 (w = 0..127). Thread w
// copies chunk w % 8 of every k-block of rows w / 8 + 16 j: 8 threads cover a 128-byte line.
__device__ __forceinline__ void load_tile_bf16(const TileSrc& src, int t, uint32_t dst, int w) {
  const int c8 = w & 7;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int rr = (w >> 3) + 16 * j;
    bool present;
    const uint8_t* g = src.row(t, rr, present) + c8 * 16;
    const uint32_t d = dst + sw128_chunk(rr, c8);
#pragma unroll
    for (int kb = 0; kb < 9; ++kb) cp_async16(d + kb * kKBlockBytes, g + kb * 128, present);
  }
}

// fp8: tile t into a raw stage ([64 rows][576 bytes]) by WG1; warp w / 32 copies rows 16 (w / 32)
// .. +15, lane-consecutive 16-byte chunks.
__device__ __forceinline__ void load_tile_raw(const TileSrc& src, int t, uint32_t dst, int w) {
  const int lane = w & 31, r0 = 16 * (w >> 5);
#pragma unroll 6
  for (int k = 0; k < 18; ++k) {
    const int x = lane + 32 * k;
    const int rr = r0 + x / 36, ch = x % 36;
    bool present;
    const uint8_t* g = src.row(t, rr, present);
    cp_async16(dst + rr * 576 + ch * 16, g + ch * 16, present);
  }
}

// fp8: raw stage -> 16-bit tile, all 256 threads; 16 e4m3 bytes become two 16-byte f16 chunks.
// Lanes alternate which chunk they store first so that a store phase hits 8 bank groups.
__device__ __forceinline__ void convert_tile(const uint8_t* raw, uint8_t* k16, int tid) {
#pragma unroll 3
  for (int k = 0; k < 9; ++k) {
    const int x = tid + 256 * k;
    const int r = x / 36, ch = x % 36;
    const uint4 v = *reinterpret_cast<const uint4*>(raw + r * 576 + ch * 16);
    const uint32_t in[4] = {v.x, v.y, v.z, v.w};
    uint32_t w[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const __half2_raw lo =
          __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(in[j] & 0xffffu), __NV_E4M3);
      const __half2_raw hi =
          __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(in[j] >> 16), __NV_E4M3);
      w[2 * j] = static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(lo.y) << 16);
      w[2 * j + 1] = static_cast<uint32_t>(hi.x) | (static_cast<uint32_t>(hi.y) << 16);
    }
    const uint4 c0 = make_uint4(w[0], w[1], w[2], w[3]), c1 = make_uint4(w[4], w[5], w[6], w[7]);
    const int first = (ch >> 2) & 1;
    *reinterpret_cast<uint4*>(k16 + sw128_chunk(r, 2 * ch + first)) = first ? c1 : c0;
    *reinterpret_cast<uint4*>(k16 + sw128_chunk(r, 2 * ch + 1 - first)) = first ? c0 : c1;
  }
}

// Q of heads [h0, h0 + nh) of this row into the 16-bit Q tile (zeros for local heads >= nh), and
// the per-head score factor in log2 units; fp8: q times 2^e per head (max |q| to [2^13, 2^14)).
template <bool kFp8>
__device__ __forceinline__ void load_q(const PagedDecodeArgs& a, int row, int h0, int nh,
                                       uint8_t* sQ, float* sQf, float* sQmul) {
  using C = WgmmaCfg<kFp8>;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const float* qrow = a.q + row * a.q_row_stride;
  const float base = a.scale * a.cache.k_scale * kLog2e;
  if constexpr (kFp8) {
    for (int i = warp; i < C::kHeads; i += 8) {
      float mx = 0.0f;
      if (i < nh)
        for (int f = lane; f < C::HD; f += 32) mx = fmaxf(mx, fabsf(qrow[(h0 + i) * C::HD + f]));
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      int e = 0;
      if (mx > 0.0f && isfinite(mx)) {
        int ex;
        frexpf(mx, &ex);  // mx in [2^(ex-1), 2^ex)
        e = min(max(14 - ex, -126), 126);
      }
      if (lane == 0) {
        sQmul[i] = ldexpf(1.0f, e);
        sQf[i] = base * ldexpf(1.0f, -e);
      }
    }
    __syncthreads();
  } else {
    if (tid < C::kHeads) sQf[tid] = base;
  }
  const bool vec = (reinterpret_cast<uintptr_t>(qrow) & 15u) == 0;  // head rows are 2304 bytes
#pragma unroll 6
  for (int x = tid; x < C::kHeads * (C::HD / 8); x += C::kThreads) {
    const int i = x / (C::HD / 8), ch = x % (C::HD / 8);
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (i < nh) {
      const float* src = qrow + static_cast<int64_t>(h0 + i) * C::HD + ch * 8;
      float v[8];
      if (vec) {
        const float4 lo = *reinterpret_cast<const float4*>(src);
        const float4 hi = *reinterpret_cast<const float4*>(src + 4);
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z,
        v[7] = hi.w;
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = src[j];
      }
      const float mul = kFp8 ? sQmul[i] : 1.0f;
      w = make_uint4(pack2<kFp8>(v[0] * mul, v[1] * mul), pack2<kFp8>(v[2] * mul, v[3] * mul),
                     pack2<kFp8>(v[4] * mul, v[5] * mul), pack2<kFp8>(v[6] * mul, v[7] * mul));
    }
    *reinterpret_cast<uint4*>(sQ + sw128_chunk(i, ch)) = w;
  }
}

// 2^x on the MUFU unit; 2^-inf = 0 and NaN stays NaN (results below 2^-126 flush to 0, far
// below what a p or a rescale factor can contribute).
__device__ __forceinline__ float exp2_fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One tile's online-softmax step on WG0's S accumulators, for the thread's rows (register i is
// in row half (i >> 1) & 1). s: raw q·k in, p out. m, d: running max (log2 units) and this
// thread's share of the running sum. f: the factor O and d were rescaled by (host:
// softmax_rescale; 1 when the max did not grow, also for an all-masked tile).
__device__ __forceinline__ void softmax_tile(float (&s)[32], float (&m)[2], float (&d)[2],
                                             const float (&sl2)[2], int tile_tok, int q4, int start,
                                             int end, float (&f)[2]) {
  float mx[2] = {-INFINITY, -INFINITY};
  if (tile_tok >= start && tile_tok + 64 <= end) {  // the whole tile is in the split
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      s[i] *= sl2[(i >> 1) & 1];
      mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int h = (i >> 1) & 1;
      const int tok = tile_tok + acc_col(q4, i);
      s[i] = (tok >= start && tok < end) ? s[i] * sl2[h] : -INFINITY;
      mx[h] = fmaxf(mx[h], s[i]);  // fmaxf drops a NaN score, as the host's `s > tile_max`
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = warp_max_ignore_nan(mx[h], 4);  // the quad holds the row's 64 columns
    f[h] = 1.0f;
    if (mx[h] > m[h]) {
      f[h] = (m[h] == -INFINITY) ? 0.0f : exp2_fast(m[h] - mx[h]);
      m[h] = mx[h];
    }
    d[h] *= f[h];
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int h = (i >> 1) & 1;
    s[i] = (s[i] == -INFINITY) ? 0.0f : exp2_fast(s[i] - m[h]);  // a masked entry is 0 exactly
    d[h] += s[i];
  }
}

// O *= f per row (skipped, warp by warp, when no row of the warp changed: f == 1 is exact).
__device__ __forceinline__ void rescale_o(float (&o)[128], float f0, float f1) {
  if (__all_sync(0xffffffffu, f0 == 1.0f && f1 == 1.0f)) return;
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] *= ((i >> 1) & 1) ? f1 : f0;
}

// WG0's part of a tile: S, softmax, P handed to WG1, its half of P·V. Returns after its P·V.
template <bool kF16>
__device__ __forceinline__ void wg0_tile(float (&o)[128], float (&m)[2], float (&d)[2],
                                         const float (&sl2)[2], uint32_t q_addr, uint32_t k_addr,
                                         uint8_t* sP, float* sScale, int tile_tok, const Split& sp,
                                         int w, bool wait_p_empty) {
  float sacc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) sacc[i] = 0.0f;
  fence_regs(sacc);
  wgmma_fence();
  qk_chain<kF16>(sacc, q_addr, k_addr);
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(sacc);
  float f[2];
  softmax_tile(sacc, m, d, sl2, tile_tok, w & 3, sp.start, sp.end, f);
  uint32_t pa[4][4];
  p_frag<kF16>(sacc, pa);
  if (wait_p_empty) named_sync(kBarPEmpty, kBarThreads);  // WG1 is done with P(t - 1)
  store_p(sP, pa, w);
  if ((w & 3) == 0) {
    sScale[acc_row(w, 0)] = f[0];
    sScale[acc_row(w, 2)] = f[1];
  }
  fence_proxy_async();
  handoff(kBarPFull);
  rescale_o(o, f[0], f[1]);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) fence_regs(pa[kk]);
  fence_regs(o);
  wgmma_fence();
  pv_chain_rs<kF16>(o, pa, k_addr, 0);
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(o);
}

// WG1's half of P·V of a tile, P and its rescale factors from shared memory (after PFull):
// issued, not waited for (wg1_finish), so that WG1 can hand WG0 the next tile meanwhile.
template <bool kF16>
__device__ __forceinline__ void wg1_issue(float (&o)[128], uint32_t p_addr, uint32_t k_addr,
                                          const float* sScale, int w) {
  named_sync(kBarPFull, kBarThreads);
  rescale_o(o, sScale[acc_row(w, 0)], sScale[acc_row(w, 2)]);
  fence_regs(o);
  wgmma_fence();
  pv_chain_ss<kF16>(o, p_addr, k_addr, 1);
  wgmma_commit();
}
__device__ __forceinline__ void wg1_finish(float (&o)[128]) {
  wgmma_wait<0>();
  fence_regs(o);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <bool kFp8>
__global__ void __launch_bounds__(WgmmaCfg<kFp8>::kThreads, 1)
    decode_mla_wgmma_kernel(const PagedDecodeArgs a, int log2_bs) {
  using C = WgmmaCfg<kFp8>;
  constexpr int VD = C::VD;
  const PagedKv& c = a.cache;
  const HeadBlockCta cta = head_block_cta(a, C::kHeads);
  const int row = cta.row, s = cta.s, kvh = cta.kvh, h0 = cta.h0, nh = cta.nh;

  const Split sp = read_split(a, row, s);
  if (finish_without_attention(a, sp, row, s, h0, nh, VD)) return;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024u - (smem_u32(smem_dyn) & 1023u)) & 1023u);
  uint8_t* sQ = smem + C::kOffQ;
  uint8_t* sP = smem + C::kOffP;
  float* sScale = reinterpret_cast<float*>(smem + C::kOffScale);
  float* sRowM = reinterpret_cast<float*>(smem + C::kOffRowM);
  float* sRowD = reinterpret_cast<float*>(smem + C::kOffRowD);
  float* sQf = reinterpret_cast<float*>(smem + C::kOffQf);
  float* sQmul = reinterpret_cast<float*>(smem + C::kOffQmul);
  const int tid = threadIdx.x, wg = tid >> 7, w = tid & 127, q4 = tid & 3;
  const int r0 = acc_row(w, 0), r1 = acc_row(w, 2);  // this thread's rows (local heads)

  TileSrc src;
  const int64_t esz = kFp8 ? 1 : 2;
  src.base = static_cast<const uint8_t*>(c.k) + static_cast<int64_t>(kvh) * c.k_stride_head * esz;
  src.table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
  src.stride_block = c.k_stride_block * esz;
  src.stride_token = c.k_stride_token * esz;
  src.log2_bs = log2_bs;
  src.tb0 = (sp.start >> log2_bs) << log2_bs;
  src.tb1 = (((sp.end - 1) >> log2_bs) + 1) << log2_bs;
  const int n_tiles = (src.tb1 - src.tb0 + C::kTile - 1) / C::kTile;

  const uint32_t q_addr = smem_u32(sQ), p_addr = smem_u32(sP);
  const uint32_t k_addr0 = smem_u32(smem + C::kOffK), raw_addr0 = smem_u32(smem + C::kOffRaw);

  // The first two tiles start loading before Q is converted.
  if (wg == 1) {
    if constexpr (kFp8) {
      load_tile_raw(src, 0, raw_addr0, w);
      cp_async_commit();
      if (n_tiles > 1) load_tile_raw(src, 1, raw_addr0 + C::kRawTileBytes, w);
      cp_async_commit();  // possibly empty: the group count stays uniform
    } else {
      load_tile_bf16(src, 0, k_addr0, w);
      cp_async_commit();
      if (n_tiles > 1) load_tile_bf16(src, 1, k_addr0 + C::kTileBytes, w);
      cp_async_commit();
    }
  }
  load_q<kFp8>(a, row, h0, nh, sQ, sQf, sQmul);
  fence_proxy_async();
  __syncthreads();  // Q and the score factors are ready

  const float sl2[2] = {sQf[r0], sQf[r1]};
  float o[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, d_run[2] = {0.0f, 0.0f};  // WG0's softmax state

  if constexpr (!kFp8) {
    if (wg == 0) {
      for (int t = 0; t < n_tiles; ++t) {
        const uint32_t k_addr = k_addr0 + (t & 1) * C::kTileBytes;
        // KFull: WG1 arrives for t + 1 after syncing our PFull(t) arrival, which follows this
        // sync for t: one phase outstanding at a time.
        named_sync(kBarKFull, kBarThreads);
        wg0_tile<false>(o, m_run, d_run, sl2, q_addr, k_addr, sP, sScale, src.tb0 + t * C::kTile,
                        sp, w, t > 0);
        // KFree[t % 2]: our next arrival on this id (t + 2) follows KFull(t + 2), which WG1
        // arrives only after it has synced here for t.
        if (t + 2 < n_tiles) handoff(kBarKFree + (t & 1));
      }
    } else {
      cp_async_wait<1>();  // tile 0 (this thread's part)
      fence_proxy_async();
      handoff(kBarKFull);
      for (int t = 0; t < n_tiles; ++t) {
        const uint32_t k_addr = k_addr0 + (t & 1) * C::kTileBytes;
        // PFull: WG0 arrives for t + 1 only after syncing PEmpty(t), which we arrive below.
        wg1_issue<false>(o, p_addr, k_addr, sScale, w);
        // (Diagnostic build: KFree first, see handoff.)
        if (KV_MLA_WGMMA_SYNC_HANDOFFS && t + 2 < n_tiles) named_sync(kBarKFree + (t & 1), kBarThreads);
        if (t + 1 < n_tiles) {  // while our P·V(t) runs: tile t + 1 to WG0
          cp_async_wait<0>();   // tile t + 1, the only group in flight
          fence_proxy_async();
          handoff(kBarKFull);
        }
        wg1_finish(o);
        // PEmpty: our arrival for t + 1 follows PFull(t + 1), which WG0 arrives after syncing
        // here for t.
        if (t + 1 < n_tiles) handoff(kBarPEmpty);
        if (t + 2 < n_tiles) {
          // WG0's P·V(t) is done with the buffer.
          if (!KV_MLA_WGMMA_SYNC_HANDOFFS) named_sync(kBarKFree + (t & 1), kBarThreads);
          load_tile_bf16(src, t + 2, k_addr, w);
          cp_async_commit();
        }
      }
    }
  } else {
    uint8_t* k16 = smem + C::kOffK;
    for (int t = 0; t < n_tiles; ++t) {
      if (wg == 1) cp_async_wait<1>();  // raw tile t (groups t and t + 1 in flight)
      __syncthreads();  // raw t visible; tile t - 1 (K16, P, rescale factors) is done with
      convert_tile(smem + C::kOffRaw + (t & 1) * C::kRawTileBytes, k16, tid);
      fence_proxy_async();
      __syncthreads();  // K16 holds tile t; raw stage t % 2 is free
      if (wg == 1) {
        if (t + 2 < n_tiles) load_tile_raw(src, t + 2, raw_addr0 + (t & 1) * C::kRawTileBytes, w);
        cp_async_commit();
        wg1_issue<true>(o, p_addr, k_addr0, sScale, w);
        wg1_finish(o);
      } else {
        // PFull for t + 1 is arrived after the next __syncthreads, which WG1 reaches after
        // syncing PFull(t): one phase at a time; P is free since that barrier too.
        wg0_tile<true>(o, m_run, d_run, sl2, q_addr, k_addr0, sP, sScale, src.tb0 + t * C::kTile,
                       sp, w, false);
      }
    }
  }

  // ---- finish: WG0's row states to shared memory, then both halves of O are written ----
  if (wg == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      d_run[h] += __shfl_xor_sync(0xffffffffu, d_run[h], 1);
      d_run[h] += __shfl_xor_sync(0xffffffffu, d_run[h], 2);
    }
    if (q4 == 0) {
      sRowM[r0] = m_run[0];
      sRowM[r1] = m_run[1];
      sRowD[r0] = d_run[0];
      sRowD[r1] = d_run[1];
    }
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int hl = h ? r1 : r0;
    if (hl >= nh) continue;
    SoftmaxState fin;
    fin.m = sRowM[hl] * kLn2;  // natural units; -inf stays -inf
    fin.d = sRowD[hl];
    const float lse = softmax_lse(fin);
    const StateSink k = state_sink(a, row, s, sp.num_splits, h0 + hl, VD, lse);
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v = o[4 * j + 2 * h + e] * c.v_scale;
        k.put(256 * wg + acc_col(q4, 4 * j + e), fin.d != 0.0f ? v / fin.d : v);
      }
    if (wg == 0 && q4 == 0) k.put_lse(lse);
  }
#else
  __trap();  // not sm_90a code: mla_wgmma_ok never lets this image be launched
#endif
}

// Whether the current device runs this file's sm_90a image, read once per device: compute
// capability 9.0, and g_mla_wgmma_image == 1 in the image the runtime loaded for it (an image
// built for sm_90 or from compute_90 PTX has 0; no image at all fails the read). The read goes
// through a private non-blocking stream with this thread's capture mode relaxed, so that it is
// legal even while another stream of the thread is being captured into a graph.
enum ImageState : int { kUnknown = 0, kReady = 1, kNotSm90 = 2, kNoImage = 3, kUnreadable = 4 };

int probe_image(int dev) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return kUnreadable;
  }
  if (major != 9 || minor != 0) return kNotSm90;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  int flag = -1;
  cudaStream_t st = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e == cudaSuccess) {
    e = cudaMemcpyFromSymbolAsync(&flag, g_mla_wgmma_image, sizeof flag, 0, cudaMemcpyDeviceToHost,
                                  st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    (void)cudaStreamDestroy(st);
  }
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidSymbol ||
            e == cudaErrorInvalidDeviceFunction)
               ? kNoImage
               : kUnreadable;
  }
  return flag == 1 ? kReady : kNoImage;
}

const char* image_missing() {
  static std::atomic<int> state[kMaxDevices] = {};
  const int dev = current_device();
  int st = state[dev].load(std::memory_order_relaxed);
  if (st == kUnknown) {
    st = probe_image(dev);
    state[dev].store(st, std::memory_order_relaxed);
  }
  switch (st) {
    case kReady: return nullptr;
    case kNotSm90: return "GPU is not compute capability 9.0 (wgmma is sm_90a only)";
    case kNoImage: return "the binary holds no sm_90a code for decode_mla_wgmma.cu";
    default: return "cannot read the device image of decode_mla_wgmma.cu";
  }
}

}  // namespace

// =================================================================================================
// When the path applies, and its launcher
// =================================================================================================

bool mla_wgmma_ok(const PagedDecodeArgs& a, std::string* why) {
  if (!mla_descriptor_ok(a, WgmmaCfg<false>::kSmem, why)) return false;
  if (const char* r = image_missing()) {
    if (why) *why = r;
    return false;
  }
  return true;
}

void launch_mla_wgmma(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int64_t ctas = head_block_grid(a, WgmmaCfg<false>::kHeads);
  const int l2 = log2_of(a.cache.block_size);
  if (a.cache.dtype == DType::fp8_e4m3) {
    allow_smem<decode_mla_wgmma_kernel<true>>(WgmmaCfg<true>::kSmem);
    decode_mla_wgmma_kernel<true>
        <<<static_cast<unsigned>(ctas), WgmmaCfg<true>::kThreads, WgmmaCfg<true>::kSmem, stream>>>(
            a, l2);
  } else {
    allow_smem<decode_mla_wgmma_kernel<false>>(WgmmaCfg<false>::kSmem);
    decode_mla_wgmma_kernel<false><<<static_cast<unsigned>(ctas), WgmmaCfg<false>::kThreads,
                                     WgmmaCfg<false>::kSmem, stream>>>(a, l2);
  }
  check_launch("decode_mla_wgmma_kernel");
}

}  // namespace kv::cuda::decode_detail
