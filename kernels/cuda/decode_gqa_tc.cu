// decode_gqa_tc.cu — CUDA paged decode, gqa_tc path: bf16 cache, head_dim 64 or 128, v_dim =
// head_dim, up to 8 q heads per kv head, power-of-two block size. CTA = (row, split, kv head),
// 4 independent warps streaming 16-token sub-tiles through a 3-stage cp.async ring each; Q·K^T and
// P·V on mma.sync with q and p split into bf16 hi + lo halves (rows 0-7 and 8-15 of the m16 tile),
// so the result has float32-like accuracy at no extra tensor cost.
//
// Wide shape: when the grid has at most one CTA per SM (rows x max_splits x kv heads <= SM count,
// i.e. small batches) and the device's opt-in shared memory holds it, the launcher uses 8 warps
// instead of 4 (same 3-stage rings: 192 KB at head_dim 128, 1 CTA per SM), doubling the warps and
// bytes in flight that a lone CTA leaves unused. Measured on an H200 (bf16, 32/8 heads, d128,
// block 16, us, best over max_splits; both sides with programmatic dependent launch, since
// removed): 16x1k 24.1 -> 23.0, 16x8k 131.9 -> 128.8; 1 row (1k-32k) moved by at most 0.5 us,
// 16x32k by +1.8 us (0.4%). Without PDL (this code) the wide shape measured 23.0 and 131.5 us at
// 16x1k / 16x8k. 4 warps x 6 stages, the same 192 KB, was no better (25.0 / 132.2 us).
//
// Reference: kernels/host/paged_decode.cpp (the spec). Split plan, masking and NaN rules shared by
// every path: the header comment of kernels/cuda/paged_decode.cu; byte/flop floors and measured
// bandwidth: results/decode-bench.md. Built into kv_cuda_kernels by the top-level CMakeLists
// (glob of kernels/cuda/*.cu); alone (add -Xptxas -v for registers / spills):
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. -c kernels/cuda/decode_gqa_tc.cu
#include <cuda_runtime.h>

#include <atomic>
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
// Why tensor cores at only 4 q heads per kv head: on CUDA cores the dot products cost ~50
// instructions per token and head (conversions, 4 FMAs per element, 16-lane shuffle trees), half of
// an H100's issue rate at full HBM bandwidth; one m16n8k16 covers 16 tokens x 16 features for all
// heads of the group. The m16 rows are (q heads 0-7 as bf16 hi) and (the same heads as bf16 lo =
// x - hi): one mma then yields hi·K and lo·K in the same lane (c0,c1 and c2,c3), whose sum is q·K to
// ~2^-17 — float32-like accuracy from rows that would otherwise be idle. P·V the same way with p.
//
// CTA = (row, split, kv head), W = 4 or 8 warps (GqaCfg). Warp w takes the 16-token sub-tiles
// w, w+W, ... of the split, each with its own online-softmax state and a private 3-stage cp.async
// ring (K and V of a sub-tile, 16-byte copies, rows XOR-swizzled for conflict-free ldmatrix).
// Warps never wait for each other until the end, where their states are merged through shared
// memory.
//
// Lane (g = lane / 4, qd = lane % 4) holds, as mma accumulators: scores of head g for tokens
// 2qd, 2qd+1 (n-tile 0) and 8+2qd, 9+2qd (n-tile 1), and O of head g for features 8j+2qd, 8j+2qd+1.

// Shapes: <HD, 4> is the default (96 KB at head_dim 128, 2 CTAs per SM); <HD, 8> the wide one
// (192 KB, 1 CTA per SM) for grids of at most one CTA per SM (launch_gqa; see the header comment).
constexpr int kNarrowWarps = 4;

template <int HD, int W = kNarrowWarps>
struct GqaCfg {
  static_assert(W == 2 || W == 4 || W == 8, "GQA fast path: 2, 4 or 8 warps");
  static constexpr int kWarps = W, kThreads = kWarps * 32, kStages = 3, kSub = 16;
  static constexpr int kChunks = HD / 8;  // 16-byte chunks of a row
  static constexpr int kRowBytes = HD * 2;
  static constexpr int kTileBytes = kSub * kRowBytes;  // K (or V) of a sub-tile
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kSmem = kWarps * kStages * kStageBytes;
  static constexpr int kKSteps = HD / 16;
  static constexpr int kNTiles = HD / 8;
  static constexpr int kLoads = kSub * kChunks / 32;  // 16-byte copies per lane, K (and V)
  static constexpr int kMaxGroup = 8;
  // CTAs per SM that the shared memory allows (227 KB opt-in, 1 KB reserved per CTA), at most 4.
  static constexpr int kMinBlocks = (232448 / (kSmem + 1024)) < 4 ? (232448 / (kSmem + 1024)) : 4;
  static_assert(HD == 64 || HD == 128, "GQA fast path: head_dim 64 or 128");
  static_assert(kWarps * kMaxGroup * HD * 4 + 2 * kWarps * kMaxGroup * 4 <= kSmem,
                "the final warp merge reuses the ring");
};

template <int HD, int W>
__global__ void __launch_bounds__(GqaCfg<HD, W>::kThreads, GqaCfg<HD, W>::kMinBlocks)
    decode_gqa_kernel(const PagedDecodeArgs a, int log2_bs) {
  using C = GqaCfg<HD, W>;
  allow_dependent_launch();
  wait_for_prior_grids();
  extern __shared__ __align__(128) uint8_t smem[];
  const PagedKv& c = a.cache;
  const int G = a.num_q_heads / c.num_kv_heads;
  int idx = blockIdx.x;
  const int kvh = idx % c.num_kv_heads;
  idx /= c.num_kv_heads;
  const int s = idx % a.max_splits, row = idx / a.max_splits;
  const int h0 = kvh * G;

  const Split sp = read_split(a, row, s);
  if (finish_without_attention(a, sp, row, s, h0, G, HD)) return;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;

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
  // Q as A fragments: rows g (bf16 hi) and g + 8 (bf16 lo) of head h0 + g; zero for g >= G.
  // Loaded after the first K/V copies are in flight, so that their latencies overlap.
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

  // Merge the W warp states of this split through shared memory (the ring is idle now).
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
// When the path applies, and its launcher
// =================================================================================================

template <int HD, int W>
void launch_shape(const PagedDecodeArgs& a, int64_t ctas, int l2, cudaStream_t stream) {
  using C = GqaCfg<HD, W>;
  allow_smem<decode_gqa_kernel<HD, W>>(C::kSmem);
  launch_dependent(decode_gqa_kernel<HD, W>, static_cast<unsigned>(ctas), C::kThreads, C::kSmem,
                   stream, a, l2);
  check_launch("decode_gqa_kernel");
}

}  // namespace

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
  if (smem_optin() < need) return no("device shared memory too small");
  return true;
}

void launch_gqa(const PagedDecodeArgs& a, cudaStream_t stream) {
  const int64_t ctas = static_cast<int64_t>(a.num_rows) * a.max_splits * a.cache.num_kv_heads;
  const int l2 = log2_of(a.cache.block_size);
  // At most one CTA per SM: the wide shape doubles the warps and bytes in flight of each SM. An
  // SM count that cannot be read (0) counts every grid as small, as it always has.
  const int sms = sm_count();
  const bool small = sms == 0 || ctas <= sms;
  if (a.cache.head_dim == 128) {
    if (small && smem_optin() >= GqaCfg<128, 8>::kSmem)
      launch_shape<128, 8>(a, ctas, l2, stream);
    else
      launch_shape<128, kNarrowWarps>(a, ctas, l2, stream);
  } else {
    if (small && smem_optin() >= GqaCfg<64, 8>::kSmem)
      launch_shape<64, 8>(a, ctas, l2, stream);
    else
      launch_shape<64, kNarrowWarps>(a, ctas, l2, stream);
  }
}

}  // namespace kv::cuda::decode_detail
