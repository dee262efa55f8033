// decode_mla_tc.cu — CUDA paged decode, mla_tc path: MLA with head_dim 576 (512 latent + 64
// rope), v_dim 512, cache.v == cache.k, bf16 or fp8_e4m3 cache. CTA = (row, split, kv head, 64 q
// heads), 8 warps, 64-token tiles double-buffered in shared memory, Q·K^T and P·V on mma.sync in
// bf16 (fp8: converted to f16, q scaled by a power of two per head): FlashMLA-like precision.
//
// Reference: kernels/host/paged_decode.cpp (the spec). Split plan, masking and NaN rules shared by
// every path: the header comment of kernels/cuda/paged_decode.cu; byte/flop floors and measured
// throughput: results/decode-bench.md. Built into kv_cuda_kernels by the top-level CMakeLists
// (glob of kernels/cuda/*.cu); alone (add -Xptxas -v for registers / spills):
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. -c kernels/cuda/decode_mla_tc.cu
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/decode_device.cuh"
#include "kernels/cuda/decode_launch.h"
#include "kernels/cuda/decode_launchers.h"

namespace kv::cuda::decode_detail {
namespace {

// =================================================================================================
// GPU kernel
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
  allow_dependent_launch();
  wait_for_prior_grids();
  using C = MlaCfg<kFp8>;
  constexpr int HD = C::HD, VD = C::VD;
  extern __shared__ __align__(128) uint8_t smem[];
  const PagedKv& c = a.cache;
  const int G = a.num_q_heads / c.num_kv_heads;
  const HeadBlockCta cta = head_block_cta(a, C::kHeads);
  const int row = cta.row, s = cta.s, kvh = cta.kvh, h0 = cta.h0, nh = cta.nh;

  const Split sp = read_split(a, row, s);
  if (finish_without_attention(a, sp, row, s, h0, nh, VD)) return;

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
      const int e = i < nh ? q_pow2_exponent(qrow + (h0 + i) * HD, HD, lane) : 0;
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

}  // namespace

// =================================================================================================
// When the path applies, and its launcher
// =================================================================================================

bool mla_ok(const PagedDecodeArgs& a, std::string* why) {
  return mla_descriptor_ok(a, MlaCfg<false>::kSmem, why);
}

void launch_mla(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int64_t ctas = head_block_grid(a, MlaCfg<false>::kHeads);
  const int l2 = log2_of(a.cache.block_size);
  if (a.cache.dtype == DType::fp8_e4m3) {
    allow_smem<decode_mla_kernel<true>>(MlaCfg<true>::kSmem);
    launch_dependent(decode_mla_kernel<true>, static_cast<unsigned>(ctas), 256, MlaCfg<true>::kSmem,
                     stream, a, l2);
  } else {
    allow_smem<decode_mla_kernel<false>>(MlaCfg<false>::kSmem);
    launch_dependent(decode_mla_kernel<false>, static_cast<unsigned>(ctas), 256,
                     MlaCfg<false>::kSmem, stream, a, l2);
  }
  check_launch("decode_mla_kernel");
}

}  // namespace kv::cuda::decode_detail
