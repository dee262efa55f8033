// mla_wgmma_steps.cuh — the steps of the mla_wgmma decode kernel (kernels/cuda/decode_mla_wgmma.cu):
// where a split's cache rows are and how they are loaded, Q's conversion, the online softmax on
// wgmma accumulators and each warpgroup's part of a tile. The tile layouts, descriptors and GEMM
// chains they use: mla_wgmma_tiles.cuh.
//
// Included by decode_mla_wgmma.cu only (nvcc, sm_90a: everything below is compiled out in any
// other device image, as the kernel body is).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/decode_device.cuh"
#include "kernels/cuda/decode_launch.h"  // aligned16
#include "kernels/cuda/mla_wgmma_tiles.cuh"
#include "kernels/cuda/tma.cuh"

namespace kv::cuda::decode_detail {

// The MLA shape the path serves: 576 = 512 latent + 64 rope features, V the first 512; 64 q heads
// per CTA (the rows of every tile), two warpgroups.
struct MlaShape {
  static constexpr int HD = 576, VD = 512, kHeads = kWgRows, kTile = kWgRows, kThreads = 256;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

enum NamedBarrier : int { kBarKFull = 1, kBarPFull = 2, kBarPEmpty = 3, kBarKFree = 4 /* and 5 */ };
constexpr int kBarThreads = 256;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

// KV_MLA_WGMMA_SYNC_HANDOFFS=1, the one diagnostic build of the decode kernels (off by default;
// CMake option KVCHECK_MLA_WGMMA_SYNC_HANDOFFS, used by scripts/gpu-sanitize.sh): every
// producer-side `bar.arrive` of the bf16 pipeline becomes a `bar.sync`, and WG1 takes KFree before
// KFull(t + 1) so that the all-sync order cannot deadlock. compute-sanitizer racecheck does not
// model ordering through `bar.arrive` (tests/bench/racecheck_probe.cu shows it on a minimal
// ping-pong); this build lets it check the same data flow with orderings it does model
// (results/sanitizer.md). Slower: never for measurements.
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

// bf16 through the TMA engine: tile t into the 16-bit tile at `dst`, completing on the mbarrier
// `bar`, issued by one warp: lane j < 64 / rows issues the nine k-block boxes of the tile's j-th run
// of `rows` = min(block size, 64) entries (a run is one block, or 64 entries of a larger one); lane
// 0 also arrives, expecting the whole tile's bytes. A run past tb1 gets a block coordinate past
// the cache (zero-filled, as load_tile_bf16's absent rows).
__device__ __forceinline__ void load_tile_tma(const CUtensorMap* map, const TileSrc& src, int t,
                                              uint32_t dst, uint32_t bar, int kvh, int num_blocks,
                                              int lane) {
  if (lane == 0) mbar_arrive_expect_tx(bar, 9 * kKBlockBytes);
  const int rows = min(1 << src.log2_bs, 64);
  if (lane < 64 / rows) {
    const int tok = src.tb0 + t * 64 + lane * rows;
    int blk = num_blocks, e = 0;
    if (tok < src.tb1) {
      blk = __ldg(src.table + (tok >> src.log2_bs));
      e = tok & ((1 << src.log2_bs) - 1);
    }
    const uint32_t d = dst + lane * rows * 128;
#pragma unroll
    for (int kb = 0; kb < 9; ++kb) tma_load_4d(d + kb * kKBlockBytes, map, bar, kb * 64, e, kvh, blk);
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

// 8 features of q (lo, hi) times mul as one 16-byte chunk of the 16-bit Q tile.
template <bool kFp8>
__device__ __forceinline__ uint4 pack_q8(const float4& lo, const float4& hi, float mul) {
  return make_uint4(pack2<kFp8>(lo.x * mul, lo.y * mul), pack2<kFp8>(lo.z * mul, lo.w * mul),
                    pack2<kFp8>(hi.x * mul, hi.y * mul), pack2<kFp8>(hi.z * mul, hi.w * mul));
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
      const int e = i < nh ? q_pow2_exponent(qrow + (h0 + i) * C::HD, C::HD, lane) : 0;
      if (lane == 0) {
        sQmul[i] = ldexpf(1.0f, e);
        sQf[i] = base * ldexpf(1.0f, -e);
      }
    }
    __syncthreads();
  } else {
    if (tid < C::kHeads) sQf[tid] = base;
  }
  const bool vec = aligned16(qrow);  // head rows are 2304 bytes
  if (vec) {
    // Every load is issued before the first conversion (heads >= nh read head nh - 1 and store
    // zeros), so that a thread has 18 x 32 bytes in flight.
    constexpr int kIters = C::kHeads * (C::HD / 8) / C::kThreads;  // 18
    static_assert(C::kHeads * (C::HD / 8) % C::kThreads == 0, "whole iterations");
    float4 v[kIters][2];
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int x = tid + k * C::kThreads, i = x / (C::HD / 8), ch = x % (C::HD / 8);
      const float4* src = reinterpret_cast<const float4*>(
          qrow + static_cast<int64_t>(h0 + min(i, nh - 1)) * C::HD + ch * 8);
      v[k][0] = __ldg(src);
      v[k][1] = __ldg(src + 1);
    }
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int x = tid + k * C::kThreads, i = x / (C::HD / 8), ch = x % (C::HD / 8);
      const uint4 w = i < nh ? pack_q8<kFp8>(v[k][0], v[k][1], kFp8 ? sQmul[i] : 1.0f)
                             : make_uint4(0u, 0u, 0u, 0u);
      *reinterpret_cast<uint4*>(sQ + sw128_chunk(i, ch)) = w;
    }
    return;
  }
#pragma unroll 6
  for (int x = tid; x < C::kHeads * (C::HD / 8); x += C::kThreads) {
    const int i = x / (C::HD / 8), ch = x % (C::HD / 8);
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (i < nh) {
      const float* src = qrow + static_cast<int64_t>(h0 + i) * C::HD + ch * 8;
      float4 lo, hi;
      if (vec) {
        lo = *reinterpret_cast<const float4*>(src);
        hi = *reinterpret_cast<const float4*>(src + 4);
      } else {
        lo = make_float4(src[0], src[1], src[2], src[3]);
        hi = make_float4(src[4], src[5], src[6], src[7]);
      }
      w = pack_q8<kFp8>(lo, hi, kFp8 ? sQmul[i] : 1.0f);
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

// op over a thread's 16 values of row half h (registers i with ((i >> 1) & 1) == h), as a tree
// of depth 4 instead of a chain of 15 dependent instructions.
template <class Op>
__device__ __forceinline__ float half_tree(const float (&s)[32], int h, Op op) {
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = op(s[4 * k + 2 * h], s[4 * k + 2 * h + 1]);
#pragma unroll
  for (int w = 4; w >= 1; w >>= 1)
#pragma unroll
    for (int k = 0; k < w; ++k) v[k] = op(v[k], v[k + w]);
  return v[0];
}
// The largest score of row half h: fmaxf drops a NaN score, as the host's `s > tile_max`.
__device__ __forceinline__ float half_max(const float (&s)[32], int h) {
  return half_tree(s, h, [](float x, float y) { return fmaxf(x, y); });
}
__device__ __forceinline__ float half_sum(const float (&s)[32], int h) {
  return half_tree(s, h, [](float x, float y) { return x + y; });
}

// One tile's online-softmax step on WG0's S accumulators, for the thread's rows (register i is
// in row half (i >> 1) & 1). s: raw q·k in, p out. m, d: running max (log2 units) and this
// thread's share of the running sum. f: the factor O and d were rescaled by (host:
// softmax_rescale; 1 when the max did not grow, also for an all-masked tile).
// On a whole tile with a positive score factor the max is taken over the raw scores and scaled
// once (sl2 > 0 and rounding keeps the order: max(s) * sl2 == max(s * sl2)), and each p is
// 2^(s * sl2 - m) from one fma; otherwise (a partial tile, or a factor that is not positive) each
// score is scaled or masked first. m == -inf (nothing finite attended yet) subtracts 0 instead:
// every score is then -inf (p = 0) or NaN (p = NaN), as with a per-entry select. The max and the
// sum are trees (results/decode-bench.md, "MLA: the softmax and the P hand-off").
__device__ __forceinline__ void softmax_tile(float (&s)[32], float (&m)[2], float (&d)[2],
                                             const float (&sl2)[2], int tile_tok, int q4, int start,
                                             int end, float (&f)[2]) {
  float mx[2], mul[2];
  if (tile_tok >= start && tile_tok + 64 <= end && sl2[0] > 0.0f && sl2[1] > 0.0f) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = half_max(s, h) * sl2[h];
      mul[h] = sl2[h];
    }
  } else {
    mx[0] = mx[1] = -INFINITY;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int h = (i >> 1) & 1;
      const int tok = tile_tok + acc_col(q4, i);
      s[i] = (tok >= start && tok < end) ? s[i] * sl2[h] : -INFINITY;
      mx[h] = fmaxf(mx[h], s[i]);  // fmaxf drops a NaN score, as the host's `s > tile_max`
    }
    mul[0] = mul[1] = 1.0f;
  }
  float sub[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = warp_max_ignore_nan(mx[h], 4);  // the quad holds the row's 64 columns
    f[h] = 1.0f;
    if (mx[h] > m[h]) {
      f[h] = (m[h] == -INFINITY) ? 0.0f : exp2_fast(m[h] - mx[h]);
      m[h] = mx[h];
    }
    d[h] *= f[h];
    sub[h] = (m[h] == -INFINITY) ? 0.0f : -m[h];
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int h = (i >> 1) & 1;
    s[i] = exp2_fast(fmaf(s[i], mul[h], sub[h]));  // a masked entry: 2^-inf = 0 exactly
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) d[h] += half_sum(s, h);
}

// O *= f per row (skipped, warp by warp, when no row of the warp changed: f == 1 is exact).
__device__ __forceinline__ void rescale_o(float (&o)[128], float f0, float f1) {
  if (__all_sync(0xffffffffu, f0 == 1.0f && f1 == 1.0f)) return;
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] *= ((i >> 1) & 1) ? f1 : f0;
}

// WG0's S of a tile, issued and committed as one wgmma group (not waited for).
// No other instruction writes sacc (the first step overwrites it): an instruction defining an
// accumulator while P·V(t - 1) is in flight would make ptxas serialise the wgmmas (C7515).
template <bool kF16>
__device__ __forceinline__ void wg0_issue_s(float (&sacc)[32], uint32_t q_addr, uint32_t k_addr) {
  wgmma_fence();
  qk_chain<kF16>(sacc, q_addr, k_addr, true);
  wgmma_commit();
}

// WG0 after S (waited for): the softmax and P in registers (pa, P·V's A fragments); f: this
// thread's rows' rescale factors.
template <bool kF16>
__device__ __forceinline__ void wg0_softmax(float (&sacc)[32], float (&m)[2], float (&d)[2],
                                            const float (&sl2)[2], int tile_tok, const Split& sp,
                                            int w, uint32_t (&pa)[4][4], float (&f)[2]) {
  softmax_tile(sacc, m, d, sl2, tile_tok, w & 3, sp.start, sp.end, f);
  p_frag<kF16>(sacc, pa);
}

// P and its row rescale factors to shared memory for WG1, announced on PFull. wait_p_empty: WG1
// may still be reading P(t - 1). Only reads pa, so it may run while WG0's P·V reads pa too.
__device__ __forceinline__ void wg0_publish_p(const uint32_t (&pa)[4][4], const float (&f)[2],
                                              uint8_t* sP, float* sScale, int w,
                                              bool wait_p_empty) {
  if (wait_p_empty) named_sync(kBarPEmpty, kBarThreads);  // WG1 is done with P(t - 1)
  store_p(sP, pa, w);
  if ((w & 3) == 0) {
    sScale[acc_row(w, 0)] = f[0];
    sScale[acc_row(w, 2)] = f[1];
  }
  fence_proxy_async();
  handoff(kBarPFull);
}

// WG0's half of P·V: O rescaled, then O[:, 0:256] += P·V issued and committed (not waited for;
// pa must stay unwritten until it completes).
template <bool kF16>
__device__ __forceinline__ void wg0_issue_pv(float (&o)[128], uint32_t (&pa)[4][4],
                                             const float (&f)[2], uint32_t k_addr) {
  rescale_o(o, f[0], f[1]);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) fence_regs(pa[kk]);
  fence_regs(o);
  wgmma_fence();
  pv_chain_rs<kF16>(o, pa, k_addr, 0);
  wgmma_commit();
}

// WG0's part of a tile, step after step: S, softmax, its half of P·V and P for WG1; returns after
// its P·V half has completed. P·V is issued before P is published for WG1, so the tensor pipe
// starts on P·V while P goes through shared memory (the P store, proxy fence and PFull take ~140
// clocks, results/decode-bench.md, "MLA: the softmax and the P hand-off").
template <bool kF16>
__device__ __forceinline__ void wg0_tile(float (&o)[128], float (&m)[2], float (&d)[2],
                                         const float (&sl2)[2], uint32_t q_addr, uint32_t k_addr,
                                         uint8_t* sP, float* sScale, int tile_tok, const Split& sp,
                                         int w, bool wait_p_empty) {
  float sacc[32];
  wg0_issue_s<kF16>(sacc, q_addr, k_addr);
  wgmma_wait<0>();
  fence_regs(sacc);
  uint32_t pa[4][4];
  float f[2];
  wg0_softmax<kF16>(sacc, m, d, sl2, tile_tok, sp, w, pa, f);
  wg0_issue_pv<kF16>(o, pa, f, k_addr);
  wg0_publish_p(pa, f, sP, sScale, w, wait_p_empty);
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

}  // namespace kv::cuda::decode_detail
