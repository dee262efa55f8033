// decode_mla_wgmma.cu — CUDA paged decode, mla_wgmma path: MLA (head_dim 576 = 512 latent + 64
// rope, v_dim 512, cache.v == cache.k, bf16 or fp8_e4m3 cache) on warpgroup MMAs (wgmma), the
// FlashMLA structure. sm_90a only: wgmma does not exist in sm_90 (or any other) code.
//
// Reference: kernels/host/paged_decode.cpp (the spec). Split plan, masking and NaN rules shared by
// every path: the header comment of kernels/cuda/paged_decode.cu; byte/flop floors: results/
// decode-bench.md. Tile layouts, descriptors and GEMM chains: kernels/cuda/mla_wgmma_tiles.cuh,
// checked on a GPU by tests/bench/wgmma_probe.cu; the loads, Q, the softmax and each warpgroup's
// part of a tile: kernels/cuda/mla_wgmma_steps.cuh. Built into kv_cuda_kernels by the top-level
// CMakeLists as its own object library, for sm_90a whatever CMAKE_CUDA_ARCHITECTURES says; alone
// (from the repository root, FILE this file):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I. -Xptxas -v -c FILE
// Built for anything but sm_90a the kernel body is compiled out and mla_wgmma_ok says no. One
// diagnostic build exists, for compute-sanitizer racecheck: KV_MLA_WGMMA_SYNC_HANDOFFS=1 (CMake
// option KVCHECK_MLA_WGMMA_SYNC_HANDOFFS; mla_wgmma_steps.cuh says what it changes).
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/decode_device.cuh"
#include "kernels/cuda/decode_launch.h"
#include "kernels/cuda/decode_launchers.h"
#include "kernels/cuda/mla_wgmma_steps.cuh"
#include "kernels/cuda/mla_wgmma_tiles.cuh"
#include "kernels/cuda/tma.cuh"

namespace kv::cuda::decode_detail {
namespace {

// 1 in a device image compiled for sm_90a, 0 in any other (and in the host's shadow copy). The
// predicate reads it from the image the runtime loaded for the current GPU: that image is also the
// one the kernel below comes from.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ int g_mla_wgmma_image = 1;
#else
__device__ int g_mla_wgmma_image = 0;
#endif

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
//        accumulators (a warp owns 16 whole rows: no cross-warp reduction), O[:, 0:256] += P·V
//        issued (4 x m64n256k16, P from its registers, V MN-major), then P to shared memory for
//        WG1 while that runs (wg0_tile, mla_wgmma_steps.cuh);
//   WG1: the loader (the tile after next, while WG0 computes this one), then O[:, 256:512] +=
//        P·V with P from shared memory.
// Each warpgroup owns 64 heads x 256 features of O: 128 float registers per thread.
//
// Shared memory (bf16; tiles 1024-byte aligned, layout of mla_wgmma_tiles.cuh):
//   Q 72 KB | K tile 0 72 KB | K tile 1 72 KB | P 8 KB | rescale, row max, row sum, q factors,
//   two mbarriers.
// bf16 loads: through the TMA engine when the block size is >= 8 and the driver encodes a tensor
// map over the cache (kernels/cuda/tma.cuh: 9 boxes of 64 features per run of min(block size, 64)
// entries, issued by one warp of WG1, landing in the swizzled tile layout; tile t completes phase
// t / 2 of buffer t % 2's mbarrier, which WG0 waits on instead of KFull); otherwise (block sizes
// 1-4, or a cache layout the driver refuses) by cp.async from all of WG1 as below. Measured on an
// H200 (results/decode-bench.md): TMA is 5-6% faster at batch >= 64 (59% of copy bandwidth at 32k
// against 56%), because WG1 no longer issues 36 cp.async per thread and tile.
// fp8: Q | one 16-bit K tile | two raw e4m3 stages of 36 KB | P ...: cp.async fills the raw stages
// two tiles ahead, all 256 threads convert a stage into the 16-bit tile (e4m3 -> f16 is exact) when
// the previous tile is done with it. fp8 runs on f16 operands (q scaled per head by a power of two,
// as in mla_tc), so it does the same matrix work per token as bf16 for half the bytes: it cannot
// be faster per token than bf16, and the conversion is not overlapped with the MMAs.
//
// bf16 pipeline, tile t in buffer t % 2, named barriers (producer arrives, consumer syncs, 256):
//   KFull     WG1 -> WG0   tile t is in shared memory (cp.async waited, proxy-fenced; not used
//                          with TMA loads); WG1 signals t + 1 while its P·V(t) still runs, so WG0
//                          goes on at once;
//   PFull     WG0 -> WG1   P(t) and its row rescale factors are in shared memory;
//   PEmpty    WG1 -> WG0   WG1's P·V(t) is done: P may be overwritten;
//   KFree[2]  WG0 -> WG1   WG0's P·V(t) is done: buffer t % 2 may be refilled with tile t + 2
//                          (two ids by parity: WG0 could otherwise arrive for t + 1 before WG1 has
//                          waited for t).
// Tile t + 2 is loaded while WG0 computes tile t + 1. Every barrier has at most one arrival phase
// outstanding by construction (argued per barrier in the loops below).
//
// Before and after the tiles (timed per CTA by %globaltimer stamps, at 64 x 8k on an H200: ~1 us
// plan, ~5 us Q, ~2.5 us to tile 0, 1.85 us per tile, ~4 us O): Q (147 KB of float32 per CTA) is
// read with 18 loads of 32 bytes in flight per thread before any conversion, and before the first
// tiles are requested, so that Q does not queue behind 144 KB of tiles while every SM starts at
// once (Q took 12 us in a plain loop behind the tiles). O is scaled by one factor per row, staged
// in the free K buffers and written by 2 KB bulk stores (the TMA engine) when rows are 16-byte
// aligned: 128 scalar stores and divisions per thread took ~10 us.
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
  static constexpr int kOffScale = kOffP + kKBlockBytes;   // float[64]: rescale of O for P's rows
  static constexpr int kOffRowM = kOffScale + 4 * kHeads;  // float[64]: final max (log2 units)
  static constexpr int kOffRowD = kOffRowM + 4 * kHeads;   // float[64]: final sum
  static constexpr int kOffQf = kOffRowD + 4 * kHeads;     // float[64]: score factor (log2 units)
  static constexpr int kOffQmul = kOffQf + 4 * kHeads;     // float[64]: q multiplier (fp8)
  static constexpr int kOffBar = kOffQmul + 4 * kHeads;  // 2 mbarriers (TMA: buffer b's tile in)
  static constexpr int kSmem = kOffBar + 16 + 1024;        // + aligning the base to 1024
  // O staged for the bulk stores over the K buffers: 64 rows of 512 floats, padded by 8 floats so
  // that a half-warp's float2 stores (4 rows x 4 column pairs) hit 32 distinct banks.
  static constexpr int kOPitch = VD + 8;
  static_assert(kHeads * kOPitch * 4 <= kOffP - kOffK, "O fits where the K tiles were");
  static_assert(kOPitch * 4 % 16 == 0, "bulk copies read 16-byte aligned rows");
  static_assert(kOffK % 1024 == 0 && kOffRaw % 1024 == 0 && kOffP % 1024 == 0, "1024-byte tiles");
  static_assert(kSmem <= 232448, "needs the 227 KB shared-memory opt-in of sm_90");
};

// Whether every head's output row of this CTA starts at a 16-byte boundary (the bulk stores').
__device__ __forceinline__ bool out_is_16b_aligned(const PagedDecodeArgs& a, int ns) {
  return ns == 1 ? aligned16(a.out) && a.out_row_stride % 4 == 0 : aligned16(a.partial_out);
}

template <bool kFp8, bool kTma>
__global__ void __launch_bounds__(WgmmaCfg<kFp8>::kThreads, 1)
    decode_mla_wgmma_kernel(const __grid_constant__ CUtensorMap tmap, const PagedDecodeArgs a,
                            int log2_bs) {
  static_assert(!(kFp8 && kTma), "the TMA loads are for the bf16 pipeline");
  allow_dependent_launch();
  wait_for_prior_grids();
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
  const uint32_t bar0 = smem_u32(smem + C::kOffBar);  // + 8 b: buffer b

  if (kTma && wg == 1 && w == 0) {
    mbar_init(bar0, 1);
    mbar_init(bar0 + 8, 1);
    fence_mbar_init();
  }
  // Tile t (0 or 1), requested by WG1 once Q is in place (why: the header comment above).
  auto load_first_tile = [&](int t) {
    if (wg != 1) return;
    if constexpr (kFp8) {
      if (t < n_tiles) load_tile_raw(src, t, raw_addr0 + t * C::kRawTileBytes, w);
      cp_async_commit();  // possibly empty: the group count stays uniform
    } else if constexpr (kTma) {
      if (w < 32 && t < n_tiles) {
        __syncwarp();
        load_tile_tma(&tmap, src, t, k_addr0 + t * C::kTileBytes, bar0 + 8 * t, kvh, c.num_blocks,
                      w);
      }
    } else {
      if (t < n_tiles) load_tile_bf16(src, t, k_addr0 + t * C::kTileBytes, w);
      cp_async_commit();
    }
  };
  load_q<kFp8>(a, row, h0, nh, sQ, sQf, sQmul);
  fence_proxy_async();
  __syncthreads();  // Q and the score factors are ready
  load_first_tile(0);
  load_first_tile(1);

  const float sl2[2] = {sQf[r0], sQf[r1]};
  float o[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, d_run[2] = {0.0f, 0.0f};  // WG0's softmax state

  if constexpr (!kFp8) {
    if (wg == 0) {
      for (int t = 0; t < n_tiles; ++t) {
        const uint32_t k_addr = k_addr0 + (t & 1) * C::kTileBytes;
        if constexpr (kTma) {
          // Tile t's bytes have landed: phase t / 2 of buffer t % 2's mbarrier.
          mbar_wait(bar0 + 8 * (t & 1), (t >> 1) & 1);
        } else {
          // KFull: WG1 arrives for t + 1 after syncing our PFull(t), which follows this sync
          // for t: one phase outstanding at a time.
          named_sync(kBarKFull, kBarThreads);
        }
        wg0_tile<false>(o, m_run, d_run, sl2, q_addr, k_addr, sP, sScale, src.tb0 + t * C::kTile,
                        sp, w, t > 0);
        // KFree[t % 2]: our next arrival on this id (t + 2) follows PEmpty(t + 1), which WG1
        // arrives only after it has synced here for t.
        if (t + 2 < n_tiles) handoff(kBarKFree + (t & 1));
      }
    } else {
      if constexpr (!kTma) {
        cp_async_wait<1>();  // tile 0 (this thread's part)
        fence_proxy_async();
        handoff(kBarKFull);
      }
      for (int t = 0; t < n_tiles; ++t) {
        const uint32_t k_addr = k_addr0 + (t & 1) * C::kTileBytes;
        // PFull: WG0 arrives for t + 1 only after syncing PEmpty(t), which we arrive below.
        wg1_issue<false>(o, p_addr, k_addr, sScale, w);
        // (Diagnostic build: KFree first, see handoff.)
        if (KV_MLA_WGMMA_SYNC_HANDOFFS && t + 2 < n_tiles) named_sync(kBarKFree + (t & 1), kBarThreads);
        if (!kTma && t + 1 < n_tiles) {  // while our P·V(t) runs: tile t + 1 to WG0
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
          if constexpr (kTma) {
            if (w < 32)
              load_tile_tma(&tmap, src, t + 2, k_addr, bar0 + 8 * (t & 1), kvh, c.num_blocks, w);
          } else {
            load_tile_bf16(src, t + 2, k_addr, w);
            cp_async_commit();
          }
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
  // O leaves through shared memory (the K buffers are free: every tile was waited for, every
  // wgmma has completed) and the TMA engine, one 2 KB bulk store per head, when the destination
  // is 16-byte aligned; otherwise element by element from the accumulators.
  const bool bulk = out_is_16b_aligned(a, sp.num_splits);
  float* sO = reinterpret_cast<float*>(smem + C::kOffK);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int hl = h ? r1 : r0;
    if (hl >= nh) continue;
    SoftmaxState fin;
    fin.m = sRowM[hl] * kLn2;  // natural units; -inf stays -inf
    fin.d = sRowD[hl];
    const float lse = softmax_lse(fin);
    const StateSink k = state_sink(a, row, s, sp.num_splits, h0 + hl, VD, lse);
    // One factor per row: v_scale / d (1 when nothing was attended) through the sink's weight
    // (k.value of a product: a NaN weight or a NaN in O still reaches the output). Within an ulp
    // or two of the host's (o * v_scale) / d: the path's tolerance is set by bf16 q and p.
    const float fac = k.value(c.v_scale * (fin.d != 0.0f ? 1.0f / fin.d : 1.0f));
    auto out_value = [&](int i) { return o[i] * fac; };
    if (bulk) {
      float* dst = sO + hl * C::kOPitch + 256 * wg + 2 * q4;  // + 8 j: columns acc_col(q4, 4 j)
#pragma unroll
      for (int j = 0; j < 32; ++j)
        *reinterpret_cast<float2*>(dst + 8 * j) = make_float2(out_value(4 * j + 2 * h),
                                                              out_value(4 * j + 2 * h + 1));
    } else {
#pragma unroll
      for (int j = 0; j < 32; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          k.o[256 * wg + acc_col(q4, 4 * j + e)] = out_value(4 * j + 2 * h + e);
    }
    if (wg == 0 && q4 == 0) k.put_lse(lse);
  }
  if (bulk) {
    fence_proxy_async();  // the rows written above, visible to the TMA engine
    __syncthreads();
    if (tid < nh) {
      bulk_store(state_out(a, row, s, sp.num_splits, h0 + tid, VD),
                 smem_u32(sO + tid * C::kOPitch), VD * 4);
      bulk_commit();
      bulk_wait_read();  // shared memory must outlive the reads
    }
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
  const unsigned ctas = static_cast<unsigned>(head_block_grid(a, WgmmaCfg<false>::kHeads));
  const int l2 = log2_of(a.cache.block_size);
  CUtensorMap map{};  // unused by the cp.async instances
  if (a.cache.dtype == DType::fp8_e4m3) {
    allow_smem<decode_mla_wgmma_kernel<true, false>>(WgmmaCfg<true>::kSmem);
    launch_dependent(decode_mla_wgmma_kernel<true, false>, ctas, WgmmaCfg<true>::kThreads,
                     WgmmaCfg<true>::kSmem, stream, map, a, l2);
  } else if (a.cache.block_size >= 8 &&
             encode_cache_map(a.cache, std::min(a.cache.block_size, 64), &map)) {
    allow_smem<decode_mla_wgmma_kernel<false, true>>(WgmmaCfg<false>::kSmem);
    launch_dependent(decode_mla_wgmma_kernel<false, true>, ctas, WgmmaCfg<false>::kThreads,
                     WgmmaCfg<false>::kSmem, stream, map, a, l2);
  } else {
    allow_smem<decode_mla_wgmma_kernel<false, false>>(WgmmaCfg<false>::kSmem);
    launch_dependent(decode_mla_wgmma_kernel<false, false>, ctas, WgmmaCfg<false>::kThreads,
                     WgmmaCfg<false>::kSmem, stream, map, a, l2);
  }
  check_launch("decode_mla_wgmma_kernel");
}

}  // namespace kv::cuda::decode_detail
