// mla_wgmma_steps.cuh — the steps of the mla_wgmma decode kernel (kernels/cuda/decode_mla_wgmma.cu):
// where a split's cache rows are and how they are loaded, Q's conversion, the online softmax on
// wgmma accumulators, the fp8 pipeline's warpgroup steps and the bf16 seesaw (FlashMLA's
// schedule). The tile layouts, descriptors and GEMM chains they use: mla_wgmma_tiles.cuh.
//
// Included by decode_mla_wgmma.cu only (nvcc, sm_90a: everything below is compiled out in any
// other device image, as the kernel body is).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/decode_common.cuh"
#include "kernels/cuda/mla_wgmma_tiles.cuh"

namespace kv::cuda::decode_detail {

// The MLA shape the path serves: 576 = 512 latent + 64 rope features, V the first 512; 64 q heads
// per CTA (the rows of every tile), two warpgroups.
struct MlaShape {
  static constexpr int HD = 576, VD = 512, kHeads = kWgRows, kTile = kWgRows, kThreads = 256;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Named barrier ids (0 is __syncthreads): the fp8 pipeline's PFull, the bf16 seesaw's four.
enum NamedBarrier : int { kBarPFull = 1, kBarScale0 = 2, kBarScale1 = 3, kBarP0Full = 4, kBarP1Full = 5 };
constexpr int kBarThreads = 256;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

// KV_MLA_WGMMA_SYNC_HANDOFFS (a diagnostic build, off by default): every producer-side
// `bar.arrive` becomes a `bar.sync` (the seesaw's order cannot deadlock with it: each producer
// reaches its barrier without waiting for the consumer's next step). compute-sanitizer racecheck does not model ordering
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
  // The seesaw's loads, in two steps so that the block-table reads are issued early: the block
  // ids of the rows (w >> 3) + 16 j of tile t that loader thread w (0..127) copies, then the
  // source of row j from its block id.
  __device__ __forceinline__ void blocks(int t, int w, int (&blk)[4]) const {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int tok = tb0 + t * 64 + (w >> 3) + 16 * j;
      blk[j] = __ldg(table + ((tok < tb1 ? tok : tb0) >> log2_bs));
    }
  }
  __device__ __forceinline__ const uint8_t* row_in(int t, int rr, int blk, bool& present) const {
    const int tok = tb0 + t * 64 + rr;
    present = tok < tb1;
    const int e = present ? tok : tb0;
    return base + static_cast<int64_t>(blk) * stride_block +
           static_cast<int64_t>(e & ((1 << log2_bs) - 1)) * stride_token;
  }
};

// Tile t's latent rows into L2 (thread w < 64 of a warpgroup: row w), so that the seesaw's
// just-in-time refills hit L2 instead of waiting for HBM. Rows past tb1 are skipped.
__device__ __forceinline__ void prefetch_tile(const TileSrc& src, int t, int w) {
  if (w >= 64) return;
  bool present;
  const uint8_t* g = src.row(t, w, present);
  if (present) prefetch_l2(g, MlaShape::HD * 2);
}

// bf16: k-blocks [KB0, KB1) of tile t into the 16-bit tile at `dst`, by the 128 threads of one
// warpgroup (w = 0..127, blk from TileSrc::blocks). Thread w copies chunk w % 8 of rows w / 8 +
// 16 j: 8 threads cover a 128-byte line. After its copies of k-block kb it arrives (when they
// have landed) on k-block kb's mbarrier, at bars + 8 kb (bars: the buffer's first; count 128).
template <int KB0, int KB1>
__device__ __forceinline__ void load_kblocks(const TileSrc& src, int t, const int (&blk)[4],
                                             uint32_t dst, int w, uint32_t bars) {
  const int c8 = w & 7;
  const uint8_t* g[4];
  bool present[4];
  uint32_t d[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int rr = (w >> 3) + 16 * j;
    g[j] = src.row_in(t, rr, blk[j], present[j]) + c8 * 16;
    d[j] = dst + sw128_chunk(rr, c8);
  }
#pragma unroll
  for (int kb = KB0; kb < KB1; ++kb) {
#pragma unroll
    for (int j = 0; j < 4; ++j) cp_async16(d[j] + kb * kKBlockBytes, g[j] + kb * 128, present[j]);
    cp_async_arrive(bars + 8 * kb);
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
  using C = MlaShape;
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

// The online softmax of one tile on S accumulators (m64n64, the thread's two rows: register i is
// in row half (i >> 1) & 1), in three pieces so that the seesaw can split them between
// warpgroups. Scores are in log2 units (x = q·k * scale * log2 e, p = 2^(x - m)).
//
// tile_max: raw q·k in s becomes x (-inf outside [start, end): their K never matters); mx gets
// each row's max over the tile (the quad holds a row's 64 columns; fmaxf drops a NaN score, as the
// host's `s > tile_max`).
__device__ __forceinline__ void tile_max(float (&s)[32], const float (&sl2)[2], int tile_tok,
                                         int q4, int start, int end, float (&mx)[2]) {
  mx[0] = mx[1] = -INFINITY;
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
      mx[h] = fmaxf(mx[h], s[i]);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) mx[h] = warp_max_ignore_nan(mx[h], 4);
}
// raise_max: the running max m takes in the tile's mx; returns the factor the state built on the
// old m is rescaled by (host: softmax_rescale; 1 when the max did not grow, also for an
// all-masked tile).
__device__ __forceinline__ float raise_max(float& m, float mx) {
  float f = 1.0f;
  if (mx > m) {
    f = (m == -INFINITY) ? 0.0f : exp2_fast(m - mx);
    m = mx;
  }
  return f;
}
// tile_exp: x becomes p = 2^(x - m) (a masked entry is 0 exactly), added to the row sums d.
__device__ __forceinline__ void tile_exp(float (&s)[32], const float (&m)[2], float (&d)[2]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int h = (i >> 1) & 1;
    s[i] = (s[i] == -INFINITY) ? 0.0f : exp2_fast(s[i] - m[h]);
    d[h] += s[i];
  }
}

// One tile's whole online-softmax step (the fp8 pipeline's WG0): m, d the running max and this
// thread's share of the running sum, f the factor O and d were rescaled by.
__device__ __forceinline__ void softmax_tile(float (&s)[32], float (&m)[2], float (&d)[2],
                                             const float (&sl2)[2], int tile_tok, int q4, int start,
                                             int end, float (&f)[2]) {
  float mx[2];
  tile_max(s, sl2, tile_tok, q4, start, end, mx);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    f[h] = raise_max(m[h], mx[h]);
    d[h] *= f[h];
  }
  tile_exp(s, m, d);
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
                                         int w) {
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

// =================================================================================================
// The bf16 seesaw (FlashMLA's schedule): tiles in pairs (t0 = 2i in buffer 0, t1 = 2i + 1 in
// buffer 1). WG0 owns S of the even tiles and O[:, 0:256], WG1 S of the odd tiles and
// O[:, 256:512]; the running max m lives in shared memory, each warpgroup keeps its own share of
// the row sums. Per pair (log2 units, f = 2^(m_old - m_new), 1 when the max does not grow):
//   WG0 (a) m0 = max(m, rowmax S(t0)), f0; O_L *= f0; P(t0) = 2^(S(t0) - m0)  -> Scale0
//   WG1 (a) m1 = max(m0, rowmax S(t1)), f1; O_R *= f0 f1; P(t1) = 2^(S(t1) - m1) -> Scale1
//   WG0 (b) O_L += P(t0) V(t0)_L                 (overlaps WG1's softmax)
//   WG1 (b) P(t1) to shared memory, O_R += P(t1) V(t1)_R
//   WG0 (d) P(t0) f1 to shared memory            -> P0Full
//   WG1 (c) O_R += P(t0) f1 V(t0)_R              -> P1Full
//   WG0 (e) O_L *= f1; O_L += P(t1) V(t1)_L
// then S(t0 + 2) by WG0 and S(t1 + 2) by WG1, overlapping the other's P·V. Equal to the online
// softmax of the host tile by tile up to the rounding of the rescale products.
//
// K is refilled in pieces as soon as its last reader is done, by the warpgroup that read it last:
// k-blocks 0-3 (the left V half) by WG0, 4-8 (the right half and rope) by WG1, each piece
// announced per k-block on an mbarrier (cp.async arrivals, count 128; parity = pair & 1), so
// that S of the next tile starts on its first k-blocks while the rest is in flight:
//   K(t0) 0-3 after WG0's (b) | K(t0) 4-8 after WG1's (c) | K(t1) 0-3 after WG0's (e) |
//   K(t1) 4-8 after WG1's (b).
// Shared memory: Q, K(t0), K(t1), P(t0) and, in Q's k-block 8, P(t1): Q's rope part is kept in
// registers (q8) from the start, so its slab is free (Q 72 KB + 2 x 72 KB + P 8 KB = 224 KB).
//
// Named barriers (producer arrives, consumer syncs, 256 threads); each is used once per pair,
// and a producer's arrival for pair i + 1 always follows its own sync on a barrier the consumer
// arrives after syncing the pair-i phase, so at most one phase is outstanding:
//   Scale0  WG0 -> WG1  m0 and f0 in shared memory (sM, sScale0);
//   Scale1  WG1 -> WG0  m1 and f1 in shared memory (sM, sScale1);
//   P0Full  WG0 -> WG1  P(t0) f1 in shared memory;
//   P1Full  WG1 -> WG0  P(t1) in shared memory and WG1's P·V of the pair issued.
// Every reader of a K piece waits on its mbarrier itself (at once if it is already complete) and
// fences the async proxy before its wgmma: the cp.async writes are generic-proxy writes.

// KV_MLA_SEESAW_PREFETCH (build-time knob, default 1): each pair first prefetches the tiles of
// the pair after next into L2 (prefetch_tile).
#ifndef KV_SEESAW_COARSE
#define KV_SEESAW_COARSE 0
#endif
#ifndef KV_SEESAW_FENCE
#define KV_SEESAW_FENCE 1
#endif
#ifndef KV_MLA_SEESAW_PREFETCH
#define KV_MLA_SEESAW_PREFETCH 0
#endif

struct Seesaw {
  TileSrc src;
  uint32_t q, k[2], p0, p1;  // shared addresses: Q, the two K buffers, P(t0), P(t1)
  uint8_t *p0_ptr, *p1_ptr;
  uint32_t bars;              // 18 mbarriers: buffer b, k-block kb at bars + 8 (9 b + kb)
  float *sM, *sScale0, *sScale1;
  int n_tiles, start, end;
  __device__ __forceinline__ uint32_t bar(int b, int kb) const { return bars + 8 * (9 * b + kb); }
};

// s (+)= Q·K^T of the tile in buffer b over the k-blocks KBs, in that order, each after its
// mbarrier (phase parity `par`) and committed as its own group; kFirst zeroes s first.
template <int KB>
__device__ __forceinline__ void seesaw_qk_kblock(const Seesaw& z, float (&s)[32],
                                                 const uint32_t (&q8)[4][4], int b, uint32_t par) {
  mbar_wait(z.bar(b, KB), par);
  if (KV_SEESAW_FENCE) fence_proxy_async();
  fence_regs(s);
  wgmma_fence();
  if constexpr (KB == 8) {
    qk_kblock_rq<false>(s, q8, z.k[b], 8);
  } else {
    qk_kblock<false>(s, z.q, z.k[b], KB);
  }
  wgmma_commit();
  fence_regs(s);
}
template <bool kFirst, int... KBs>
__device__ __forceinline__ void seesaw_qk(const Seesaw& z, float (&s)[32], const uint32_t (&q8)[4][4],
                                          int b, uint32_t par) {
  if constexpr (kFirst) {
#pragma unroll
    for (int i = 0; i < 32; ++i) s[i] = 0.0f;
  }
  if constexpr (KV_SEESAW_COARSE) {
    (mbar_wait(z.bar(b, KBs), par), ...);
    fence_proxy_async();
    fence_regs(s);
    wgmma_fence();
    ((KBs == 8 ? qk_kblock_rq<false>(s, q8, z.k[b], 8) : qk_kblock<false>(s, z.q, z.k[b], KBs)), ...);
    wgmma_commit();
    fence_regs(s);
  } else {
    (seesaw_qk_kblock<KBs>(z, s, q8, b, par), ...);
  }
}

// Q's k-block 8 into registers (p_frag's layout), after Q is in shared memory.
__device__ __forceinline__ void load_q8(const uint8_t* sQ, int w, uint32_t (&q8)[4][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      q8[kk][j] = *reinterpret_cast<const uint32_t*>(
          sQ + sw128_off(pfrag_row(w, j), 512 + pfrag_col(w, kk, j)));
}

// WG0's pair i. On entry s holds S(t0) (waited); o, l: its half of O and its share of the row
// sums. kHas1: tile t1 exists; kNext0, kNext1: tiles t0 + 2, t1 + 2 exist. The flags are
// template arguments (as in FlashMLA) so that every wgmma sequence is straight-line code: with
// run-time branches around them nvcc serialises the wgmmas (ptxas C7520).
template <bool kHas1, bool kNext0, bool kNext1>
__device__ __forceinline__ void seesaw_pair_wg0(const Seesaw& z, int i, float (&o)[128],
                                                float (&l)[2], float (&s)[32],
                                                const uint32_t (&q8)[4][4], const float (&sl2)[2],
                                                int w) {
  const int q4 = w & 3, r0 = acc_row(w, 0), r1 = acc_row(w, 2);
  {
    const int t0 = 2 * i, t1 = t0 + 1;
    int blk0[4], blk1[4];  // read now, used at the refills
    if constexpr (kNext0) z.src.blocks(t0 + 2, w, blk0);
    if constexpr (kNext1) z.src.blocks(t1 + 2, w, blk1);
    if (KV_MLA_SEESAW_PREFETCH && kNext1 && t0 + 4 < z.n_tiles) prefetch_tile(z.src, t0 + 4, w);

    // (a) softmax of S(t0) on the running max of the pairs before.
    float mx[2];
    tile_max(s, sl2, z.src.tb0 + t0 * 64, q4, z.start, z.end, mx);
    float m[2] = {z.sM[r0], z.sM[r1]};
    __syncwarp();
    float f0[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      f0[h] = raise_max(m[h], mx[h]);
      l[h] *= f0[h];
    }
    if (q4 == 0) {
      z.sM[r0] = m[0], z.sM[r1] = m[1];
      z.sScale0[r0] = f0[0], z.sScale0[r1] = f0[1];
    }
    tile_exp(s, m, l);
    rescale_o(o, f0[0], f0[1]);
    uint32_t pa[4][4];
    p_frag<false>(s, pa);
    handoff(kBarScale0);

    // (b) O_L += P(t0) V(t0)_L, while WG1 runs its softmax.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) fence_regs(pa[kk]);
    fence_regs(o);
    wgmma_fence();
    pv_chain_rs<false>(o, pa, z.k[0], 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(o);

    // (c) K(t0) 0-3 are read: refill them with tile t0 + 2.
    named_sync(kBarScale1, kBarThreads);
    if constexpr (kNext0) load_kblocks<0, 4>(z.src, t0 + 2, blk0, z.k[0], w, z.bar(0, 0));

    // (d) P(t0) on WG1's max, for WG1's half.
    const float f1[2] = {z.sScale1[r0], z.sScale1[r1]};
#pragma unroll
    for (int j = 0; j < 32; ++j) s[j] *= f1[(j >> 1) & 1];
    p_frag<false>(s, pa);
    store_p(z.p0_ptr, pa, w);
    fence_proxy_async();
    handoff(kBarP0Full);

    // (e) O_L on WG1's max, += P(t1) V(t1)_L.
    named_sync(kBarP1Full, kBarThreads);
    rescale_o(o, f1[0], f1[1]);
    l[0] *= f1[0], l[1] *= f1[1];
    if constexpr (kHas1) {
#pragma unroll
      for (int kb = 0; kb < 4; ++kb) mbar_wait(z.bar(1, kb), i & 1);
      fence_proxy_async();
      fence_regs(o);
      wgmma_fence();
      pv_chain_ss<false>(o, z.p1, z.k[1], 0);
      wgmma_commit();
    }

    // (f) S(t0 + 2) on the k-blocks as they land; K(t1) 0-3 go to tile t1 + 2 once (e) is done.
    if constexpr (kNext0) {
      const uint32_t par = (i + 1) & 1;
      seesaw_qk<true, 0, 1, 2, 3>(z, s, q8, 0, par);
      if constexpr (kNext1) {
        wgmma_wait<KV_SEESAW_COARSE ? 1 : 4>();  // (e) is done, S's groups may not be
        load_kblocks<0, 4>(z.src, t1 + 2, blk1, z.k[1], w, z.bar(1, 0));
      }
      seesaw_qk<false, 4, 5, 6, 7, 8>(z, s, q8, 0, par);
    }
    wgmma_wait<0>();
    fence_regs(o);
    fence_regs(s);
  }
}

// WG0's pairs: the steady ones, then the last one or two (see seesaw_pair_wg0).
__device__ __forceinline__ void seesaw_wg0(const Seesaw& z, float (&o)[128], float (&l)[2],
                                           float (&s)[32], const uint32_t (&q8)[4][4],
                                           const float (&sl2)[2], int w) {
  int i = 0;
#pragma unroll 1
  for (; 2 * i + 3 < z.n_tiles; ++i) seesaw_pair_wg0<true, true, true>(z, i, o, l, s, q8, sl2, w);
  const int left = z.n_tiles - 2 * i;  // 1, 2 or 3 tiles
  if (left == 3) {
    seesaw_pair_wg0<true, true, false>(z, i, o, l, s, q8, sl2, w);
    seesaw_pair_wg0<false, false, false>(z, i + 1, o, l, s, q8, sl2, w);
  } else if (left == 2) {
    seesaw_pair_wg0<true, false, false>(z, i, o, l, s, q8, sl2, w);
  } else {
    seesaw_pair_wg0<false, false, false>(z, i, o, l, s, q8, sl2, w);
  }
}

// WG1's pair i (flags as for seesaw_pair_wg0). On entry s holds S(t1) if tile t1 exists.
template <bool kHas1, bool kNext0, bool kNext1>
__device__ __forceinline__ void seesaw_pair_wg1(const Seesaw& z, int i, float (&o)[128],
                                                float (&l)[2], float (&s)[32],
                                                const uint32_t (&q8)[4][4], const float (&sl2)[2],
                                                int w) {
  const int q4 = w & 3, r0 = acc_row(w, 0), r1 = acc_row(w, 2);
  {
    const int t0 = 2 * i, t1 = t0 + 1;
    int blk0[4], blk1[4];
    if constexpr (kNext0) z.src.blocks(t0 + 2, w, blk0);
    if constexpr (kNext1) z.src.blocks(t1 + 2, w, blk1);
    if (KV_MLA_SEESAW_PREFETCH && kNext1 && t1 + 4 < z.n_tiles) prefetch_tile(z.src, t1 + 4, w);

    // K(t0) 4-7, read in (c): complete since WG0's S(t0); waited here, before any wgmma of the
    // pair is in flight (a wait loop between two wgmmas on o makes nvcc serialise them).
#pragma unroll
    for (int kb = 4; kb < 8; ++kb) mbar_wait(z.bar(0, kb), i & 1);

    // (a) softmax of S(t1) on WG0's max of this pair.
    named_sync(kBarScale0, kBarThreads);
    float m[2] = {z.sM[r0], z.sM[r1]};
    float f[2] = {z.sScale0[r0], z.sScale0[r1]};  // becomes f0 f1
    __syncwarp();
    uint32_t pa[4][4];
    if constexpr (kHas1) {
      float mx[2];
      tile_max(s, sl2, z.src.tb0 + t1 * 64, q4, z.start, z.end, mx);
      float f1[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f1[h] = raise_max(m[h], mx[h]);
        f[h] *= f1[h];
        l[h] *= f[h];
      }
      if (q4 == 0) {
        z.sM[r0] = m[0], z.sM[r1] = m[1];
        z.sScale1[r0] = f1[0], z.sScale1[r1] = f1[1];
      }
      tile_exp(s, m, l);
      p_frag<false>(s, pa);
    } else {
      if (q4 == 0) z.sScale1[r0] = 1.0f, z.sScale1[r1] = 1.0f;
      l[0] *= f[0], l[1] *= f[1];
    }
    rescale_o(o, f[0], f[1]);
    handoff(kBarScale1);

    // (b) P(t1) for WG0's half; O_R += P(t1) V(t1)_R.
    fence_regs(o);
    wgmma_fence();
    if constexpr (kHas1) {
      store_p(z.p1_ptr, pa, w);
      fence_proxy_async();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) fence_regs(pa[kk]);
      pv_chain_rs<false>(o, pa, z.k[1], 1);
      wgmma_commit();
    }

    // (c) O_R += P(t0) f1 V(t0)_R.
    named_sync(kBarP0Full, kBarThreads);
    fence_proxy_async();
    pv_chain_ss<false>(o, z.p0, z.k[0], 1);
    wgmma_commit();
    handoff(kBarP1Full);

    // (d) K(t1) 4-8 and K(t0) 4-8 are read: refill them.
    if constexpr (kNext1) {
      wgmma_wait<1>();
      load_kblocks<4, 9>(z.src, t1 + 2, blk1, z.k[1], w, z.bar(1, 0));
    }
    if constexpr (kNext0) {
      wgmma_wait<0>();
      load_kblocks<4, 9>(z.src, t0 + 2, blk0, z.k[0], w, z.bar(0, 0));
    }

    // (e) S(t1 + 2), WG1's own k-blocks first.
    if constexpr (kNext1) seesaw_qk<true, 4, 5, 6, 7, 8, 0, 1, 2, 3>(z, s, q8, 1, (i + 1) & 1);
    wgmma_wait<0>();
    fence_regs(o);
    fence_regs(s);
  }
}

// WG1's pairs, in the same order as WG0's.
__device__ __forceinline__ void seesaw_wg1(const Seesaw& z, float (&o)[128], float (&l)[2],
                                           float (&s)[32], const uint32_t (&q8)[4][4],
                                           const float (&sl2)[2], int w) {
  int i = 0;
#pragma unroll 1
  for (; 2 * i + 3 < z.n_tiles; ++i) seesaw_pair_wg1<true, true, true>(z, i, o, l, s, q8, sl2, w);
  const int left = z.n_tiles - 2 * i;
  if (left == 3) {
    seesaw_pair_wg1<true, true, false>(z, i, o, l, s, q8, sl2, w);
    seesaw_pair_wg1<false, false, false>(z, i + 1, o, l, s, q8, sl2, w);
  } else if (left == 2) {
    seesaw_pair_wg1<true, false, false>(z, i, o, l, s, q8, sl2, w);
  } else {
    seesaw_pair_wg1<false, false, false>(z, i, o, l, s, q8, sl2, w);
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace kv::cuda::decode_detail
