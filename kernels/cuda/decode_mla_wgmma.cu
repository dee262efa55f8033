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
#include "kernels/cuda/mla_wgmma_steps.cuh"
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
// same tiles back to back (the second read hits L2). 256 threads = two warpgroups, each owning 64
// heads x 256 features of O (128 float registers per thread). S = Q·K^T is 36 x m64n64k16 (Q and
// K from shared memory), P·V 4 x m64n256k16 per half (V read MN-major from the same K tile).
//
// bf16: the seesaw of mla_wgmma_steps.cuh (FlashMLA's schedule): both warpgroups compute S, of
// alternate tiles, so that one's softmax runs under the other's matrix work; K is refilled in
// k-block pieces by cp.async with mbarrier arrivals as soon as each piece's last reader is done.
// Shared memory (tiles 1024-byte aligned, layout of mla_wgmma_tiles.cuh):
//   Q 72 KB (its k-block 8 holds P of the odd tile) | K 2 x 72 KB | P of the even tile 8 KB |
//   running max, rescale factors, row sums, q factors, 18 mbarriers.
//
// fp8: Q | one 16-bit K tile | two raw e4m3 stages of 36 KB | P ...: WG1 cp.asyncs the raw stages
// two tiles ahead, all 256 threads convert a stage into the 16-bit tile (e4m3 -> f16 is exact) when
// the previous tile is done with it; WG0 runs S, the softmax and its P·V half, WG1 the other half
// with P from shared memory (PFull). fp8 runs on f16 operands (q scaled per head by a power of two,
// as in mla_tc), so it does the same matrix work per token as bf16 for half the bytes: it cannot
// be faster per token than bf16, and the conversion is not overlapped with the MMAs.
//
// What the host does and this keeps: scores of entries outside [start, end) are -inf (their K never
// matters), P·V runs over every entry of every block the split touches (p = 0 times a stale NaN in
// V is NaN), rows of a 64-token tile past the split's last block (block size < 64) are zero-filled
// and masked. Scores are kept in log2 units (x = q·k * scale * log2 e, p = 2^(x - m)): the same
// softmax, m converted back to natural units for the lse.

template <bool kFp8>
struct WgmmaCfg : MlaShape {
  static constexpr int kTileBytes = (HD / 64) * kKBlockBytes;  // 73728: a 64-row 16-bit tile
  static constexpr int kRawTileBytes = kTile * HD;             // 36864
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kTileBytes;
  static constexpr int kOffRaw = kOffK + (kFp8 ? 1 : 2) * kTileBytes;
  static constexpr int kOffP = kOffRaw + (kFp8 ? 2 * kRawTileBytes : 0);
  static constexpr int kOffM = kOffP + kKBlockBytes;         // float[64]: running max (log2 units)
  static constexpr int kOffScale0 = kOffM + 4 * kHeads;      // float[64]: O rescale (fp8: for P)
  static constexpr int kOffScale1 = kOffScale0 + 4 * kHeads;  // float[64]: WG1's (seesaw)
  static constexpr int kOffL = kOffScale1 + 4 * kHeads;      // float[2][64]: each WG's row sums
  static constexpr int kOffQf = kOffL + 8 * kHeads;          // float[64]: score factor (log2 units)
  static constexpr int kOffQmul = kOffQf + 4 * kHeads;       // float[64]: q multiplier (fp8)
  static constexpr int kOffBar = kOffQmul + 4 * kHeads;      // 18 mbarriers (bf16)
  static constexpr int kSmem = kOffBar + (kFp8 ? 0 : 18 * 8) + 1024;  // + aligning the base
  static_assert(kOffK % 1024 == 0 && kOffRaw % 1024 == 0 && kOffP % 1024 == 0, "1024-byte tiles");
  static_assert(kOffBar % 8 == 0, "mbarriers are 8-byte aligned");
  static_assert(kSmem <= 232448, "needs the 227 KB shared-memory opt-in of sm_90");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// S of tile 0 (WG0) and tile 1 (WG1), before the seesaw's first pair.
__device__ __forceinline__ void seesaw_first_s(const Seesaw& z, float (&s)[32],
                                               const uint32_t (&q8)[4][4], int wg) {
  if (wg == 0) {
    seesaw_qk<true, 0, 1, 2, 3, 4, 5, 6, 7, 8>(z, s, q8, 0, 0);
  } else if (z.n_tiles > 1) {
    seesaw_qk<true, 4, 5, 6, 7, 8, 0, 1, 2, 3>(z, s, q8, 1, 0);
  }
  wgmma_wait<0>();
  fence_regs(s);
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
  float* sM = reinterpret_cast<float*>(smem + C::kOffM);
  float* sScale0 = reinterpret_cast<float*>(smem + C::kOffScale0);
  float* sL = reinterpret_cast<float*>(smem + C::kOffL);
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

  float o[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
  float l[2] = {0.0f, 0.0f};  // this thread's share of its rows' sums

  if constexpr (!kFp8) {
    Seesaw z;
    z.src = src;
    z.q = q_addr;
    z.k[0] = k_addr0;
    z.k[1] = k_addr0 + C::kTileBytes;
    z.p0 = p_addr;
    z.p1 = q_addr + 8 * kKBlockBytes;  // Q's k-block 8, in registers from the start
    z.p0_ptr = sP;
    z.p1_ptr = sQ + 8 * kKBlockBytes;
    z.bars = smem_u32(smem + C::kOffBar);
    z.sM = sM;
    z.sScale0 = sScale0;
    z.sScale1 = reinterpret_cast<float*>(smem + C::kOffScale1);
    z.n_tiles = n_tiles;
    z.start = sp.start;
    z.end = sp.end;
    if (tid < 18) mbar_init(z.bars + 8 * tid, 128);
    if (tid < C::kHeads) sM[tid] = -INFINITY;
    __syncthreads();  // the mbarriers are initialised
    // Tiles 0 and 1 start loading before Q is converted, k-blocks 0-3 by WG0 and 4-8 by WG1 as
    // in the seesaw's refills.
    for (int t = 0; t < 2 && t < n_tiles; ++t) {
      int blk[4];
      src.blocks(t, w, blk);
      if (wg == 0) {
        load_kblocks<0, 4>(src, t, blk, z.k[t], w, z.bar(t, 0));
      } else {
        load_kblocks<4, 9>(src, t, blk, z.k[t], w, z.bar(t, 0));
      }
    }
    if (KV_MLA_SEESAW_PREFETCH && 2 + wg < n_tiles) prefetch_tile(src, 2 + wg, w);
    load_q<false>(a, row, h0, nh, sQ, sQf, sQmul);
    fence_proxy_async();
    __syncthreads();  // Q and the score factors are ready
    uint32_t q8[4][4];
    load_q8(sQ, w, q8);
    const float sl2[2] = {sQf[r0], sQf[r1]};
    float sacc[32];
    seesaw_first_s(z, sacc, q8, wg);
    if (wg == 0) {
      seesaw_wg0(z, o, l, sacc, q8, sl2, w);
    } else {
      seesaw_wg1(z, o, l, sacc, q8, sl2, w);
    }
  } else {
    // The first two tiles start loading before Q is converted.
    if (wg == 1) {
      load_tile_raw(src, 0, raw_addr0, w);
      cp_async_commit();
      if (n_tiles > 1) load_tile_raw(src, 1, raw_addr0 + C::kRawTileBytes, w);
      cp_async_commit();  // possibly empty: the group count stays uniform
    }
    load_q<true>(a, row, h0, nh, sQ, sQf, sQmul);
    fence_proxy_async();
    __syncthreads();  // Q and the score factors are ready
    const float sl2[2] = {sQf[r0], sQf[r1]};
    float m_run[2] = {-INFINITY, -INFINITY};  // WG0's softmax state (WG1's l stays 0)
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
        wg1_issue<true>(o, p_addr, k_addr0, sScale0, w);
        wg1_finish(o);
      } else {
        // PFull for t + 1 is arrived after the next __syncthreads, which WG1 reaches after
        // syncing PFull(t): one phase at a time; P is free since that barrier too.
        wg0_tile<true>(o, m_run, l, sl2, q_addr, k_addr0, sP, sScale0, src.tb0 + t * C::kTile,
                       sp, w);
      }
    }
    if (wg == 0 && q4 == 0) sM[r0] = m_run[0], sM[r1] = m_run[1];
  }

  // ---- finish: the row sums of both warpgroups, then both halves of O are written ----
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  if (q4 == 0) sL[64 * wg + r0] = l[0], sL[64 * wg + r1] = l[1];
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int hl = h ? r1 : r0;
    if (hl >= nh) continue;
    SoftmaxState fin;
    fin.m = sM[hl] * kLn2;  // natural units; -inf stays -inf
    fin.d = sL[hl] + sL[64 + hl];
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
