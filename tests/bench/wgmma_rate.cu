// wgmma_rate.cu — the tensor pipe's rate for the GEMM chains of the mla_wgmma decode path
// (kernels/cuda/mla_wgmma_tiles.cuh, the very functions the kernel calls), alone and side by side,
// in flop per SM clock: the ceiling a 64-token MLA tile is measured against (results/
// decode-bench.md, "MLA: the tensor pipe's rates"). No loads, no softmax: operands sit in shared
// memory, one CTA of two warpgroups per SM, every SM busy.
//
// Built by CUDA builds as <build>/tests/bench/wgmma_rate (sm_90a whatever CMAKE_CUDA_ARCHITECTURES
// says), or alone from the repository root; run on an H100/H200 (wgmma is sm_90a only):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I. tests/bench/wgmma_rate.cu -o wgmma_rate
//   ./wgmma_rate
// Exit status 0: measured; 1: a CUDA error; 2: no compute capability 9.0 GPU.
//
// Every chain accumulates into its registers across repetitions: a chain whose first step
// overwrites the accumulators (as the kernel's S does) leaves the previous repetition's results
// dead, and ptxas then drops part of the wgmmas (a third of them in a first version of this
// probe, which measured 180% of the dense peak).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cuda/mla_wgmma_tiles.cuh"

using namespace kv::cuda::decode_detail;

namespace {

constexpr int kTileBytes = 9 * kKBlockBytes;  // 64 rows x 576 bf16
// Q | K tile | a second K tile | P, each 1024-byte aligned (+ 1024 to align the base).
constexpr int kOffK = kTileBytes, kOffK2 = 2 * kTileBytes, kOffP = 3 * kTileBytes;
constexpr int kSmem = kOffP + kKBlockBytes + 1024;
constexpr int kReps = 2000;

// The warpgroups' programs, one repetition each (a repetition is waited for before the next).
enum Mode : int {
  kS,         // WG0: S = Q·K^T, 36 x m64n64k16 (the kernel's qk_chain); WG1 idle
  kS2,        // both: S, each over its own K tile
  kSHalf,     // both: S split along the features, 18 k-steps each (one S in all)
  kPv0,       // WG0: its P·V half, 4 x m64n256k16, P from registers (pv_chain_rs); WG1 idle
  kPv2,       // both: the two P·V halves (WG1: pv_chain_ss, P from shared memory)
  kTile,      // the kernel's order without softmax or loads: WG0 S, then both P·V halves
  kS32,       // WG0: S of a 32-token tile, 36 x m64n32k16; WG1 idle
  kS32Pv,     // WG0: S of a 32-token tile; WG1 its P·V half of a 32-token tile (2 k-steps)
  kNumModes
};
struct ModeInfo {
  const char* name;
  double flop;  // per repetition and CTA
};
constexpr double kFlopS = 64.0 * 64 * 576 * 2, kFlopPvHalf = 64.0 * 256 * 64 * 2;
constexpr ModeInfo kModes[kNumModes] = {
    {"S (WG0 alone)", kFlopS},
    {"S + S (both, own K)", 2 * kFlopS},
    {"S split in two k halves (both)", kFlopS},
    {"P.V half (WG0 alone, P in registers)", kFlopPvHalf},
    {"P.V halves (both)", 2 * kFlopPvHalf},
    {"tile: S, then both P.V halves", kFlopS + 2 * kFlopPvHalf},
    {"S of 32 tokens (WG0 alone, m64n32)", kFlopS / 2},
    {"S of 32 tokens + 32-token P.V half", kFlopS / 2 + kFlopPvHalf / 2},
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// s += Q·K^T over k-steps [first, first + steps) of 576 features (m64n64k16, both K-major).
template <int kSteps, int kFirst>
__device__ __forceinline__ void s_steps(float (&s)[32], uint32_t q, uint32_t k) {
  const uint64_t dq = desc_kmajor(q), dk = desc_kmajor(k);
#pragma unroll
  for (int i = 0; i < kSteps; ++i) {
    const int ks = kFirst + i;
    const uint32_t off = (ks >> 2) * kKBlockBytes + (ks & 3) * 32;
    wgmma_64x64_ss<false>(s, desc_add(dq, off), desc_add(dk, off));
  }
}

// d(64x32) += A(64x16)·B(16x32), both K-major from shared memory.
__device__ __forceinline__ void wgmma_64x32_ss(float (&d)[16], uint64_t da, uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, 1, 1, 1, "
      "0, 0;\n"
      : KV_WG_ACC8(d, 0), KV_WG_ACC8(d, 8)
      : "l"(da), "l"(db));
}
// s += Q·K^T for a 32-token K tile (k-blocks of 32 rows: 4 KB apart).
template <int N>
__device__ __forceinline__ void s32_steps(float (&s)[N], uint32_t q, uint32_t k) {
  static_assert(N == 16, "an m64n32 accumulator");
  const uint64_t dq = desc_kmajor(q), dk = desc_kmajor(k);
#pragma unroll
  for (int ks = 0; ks < 36; ++ks)
    wgmma_64x32_ss(s, desc_add(dq, (ks >> 2) * kKBlockBytes + (ks & 3) * 32),
                   desc_add(dk, (ks >> 2) * (kKBlockBytes / 2) + (ks & 3) * 32));
}

template <int N>
__device__ __forceinline__ void issue_wait(float (&acc)[N]) {
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(acc);
}
// One chain each, issued and waited for: S over k-steps [first, first + steps); WG0's P·V half
// (P from registers); WG1's P·V half over `ksteps` of 16 tokens (P from shared memory).
template <int kSteps, int kFirst>
__device__ __forceinline__ void run_s(float (&s)[32], uint32_t q, uint32_t k) {
  wgmma_fence();
  s_steps<kSteps, kFirst>(s, q, k);
  issue_wait(s);
}
__device__ __forceinline__ void run_pv_rs(float (&o)[128], const uint32_t (&pa)[4][4], uint32_t k) {
  fence_regs(o);
  wgmma_fence();
  pv_chain_rs<false>(o, pa, k, 0);
  issue_wait(o);
}
template <int kKSteps>
__device__ __forceinline__ void run_pv_ss(float (&o)[128], uint32_t p, uint32_t k) {
  fence_regs(o);
  wgmma_fence();
  const uint64_t dp = desc_kmajor(p), dv = desc_mnmajor(k + 4 * kKBlockBytes);
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk)
    wgmma_64x256_ss<false>(o, desc_add(dp, kk * 32), desc_add(dv, kk * 2048));
  issue_wait(o);
}
#endif

template <int M>
__global__ void __launch_bounds__(256, 1) rate_kernel(unsigned long long* clocks, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024u - (smem_u32(smem_dyn) & 1023u)) & 1023u);
  // Finite bf16 operands (values do not change a wgmma's time; they keep the sums finite).
  for (int i = threadIdx.x; i < (kOffP + kKBlockBytes) / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u ^ ((i * 2654435761u) & 0x003f003fu);
  fence_proxy_async();
  __syncthreads();
  const int wg = threadIdx.x >> 7, w = threadIdx.x & 127;
  const uint32_t q0 = smem_u32(smem);
  constexpr bool kUsesS16 = M == kS32 || M == kS32Pv;
  float s[32], s16[kUsesS16 ? 16 : 1], o[128];
  uint32_t pa[4][4];
#pragma unroll
  for (int i = 0; i < 32; ++i) s[i] = 0.0f;
#pragma unroll
  for (float& x : s16) x = 0.0f;
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) pa[kk][j] = 0x3c003c00u;  // bf16 pairs of 1.0
  // One branch per warpgroup around its whole loop: wgmmas under branches inside the loop make
  // ptxas serialise them (C7520).
  const long long t0 = clock64();
  // The tile addresses are made opaque in every repetition, so that the descriptors are computed
  // per tile as in the kernel (hoisted out of the loop, 36 of them would take 72 registers).
  uint32_t q, k, k2, p;
  auto addresses = [&] {
    q = q0;
    asm volatile("" : "+r"(q));
    k = q + kOffK, k2 = q + kOffK2, p = q + kOffP;
  };
  if (wg == 0) {
    for (int r = 0; r < kReps; ++r) {
      addresses();
      if constexpr (M == kS || M == kS2) {
        run_s<36, 0>(s, q, k);
      } else if constexpr (M == kSHalf) {
        run_s<18, 0>(s, q, k);
      } else if constexpr (M == kPv0 || M == kPv2) {
        run_pv_rs(o, pa, k);
      } else if constexpr (M == kTile) {
        run_s<36, 0>(s, q, k);
        named_sync(1, 256);  // "P is ready"
        run_pv_rs(o, pa, k);
        named_sync(2, 256);  // both halves done: the next tile
      } else if constexpr (kUsesS16) {
        wgmma_fence();
        s32_steps(s16, q, k);
        issue_wait(s16);
      }
    }
  } else {
    for (int r = 0; r < kReps; ++r) {
      addresses();
      if constexpr (M == kS2) {
        run_s<36, 0>(s, q, k2);
      } else if constexpr (M == kSHalf) {
        run_s<18, 18>(s, q, k);
      } else if constexpr (M == kPv2) {
        run_pv_ss<4>(o, p, k);
      } else if constexpr (M == kTile) {
        named_sync(1, 256);
        run_pv_ss<4>(o, p, k);
        named_sync(2, 256);
      } else if constexpr (M == kS32Pv) {
        run_pv_ss<2>(o, p, k);
      }
    }
  }
  const long long t1 = clock64();
  if (w == 0) clocks[blockIdx.x * 2 + wg] = static_cast<unsigned long long>(t1 - t0);
  float acc = 0.0f;  // keeps every accumulator live
#pragma unroll
  for (int i = 0; i < 32; ++i) acc += s[i];
#pragma unroll
  for (float x : s16) acc += x;
#pragma unroll
  for (int i = 0; i < 128; ++i) acc += o[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
#else
  __trap();
#endif
}

using Kernel = void (*)(unsigned long long*, float*);
constexpr Kernel kKernels[kNumModes] = {
    rate_kernel<kS>,    rate_kernel<kS2>,   rate_kernel<kSHalf>, rate_kernel<kPv0>,
    rate_kernel<kPv2>,  rate_kernel<kTile>, rate_kernel<kS32>,   rate_kernel<kS32Pv>};

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "wgmma_rate: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  int dev = 0, major = 0, minor = 0, sms = 0, clock_khz = 0;
  if (!ok(cudaGetDevice(&dev), "cudaGetDevice") ||
      !ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "attribute") ||
      !ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "attribute"))
    return 2;
  if (major != 9 || minor != 0) {
    std::fprintf(stderr, "wgmma_rate: needs compute capability 9.0 (found %d.%d)\n", major, minor);
    return 2;
  }
  if (!ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "attribute") ||
      !ok(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev), "attribute"))
    return 1;
  unsigned long long* clocks = nullptr;
  float* sink = nullptr;
  if (!ok(cudaMalloc(&clocks, sizeof(unsigned long long) * 2 * sms), "cudaMalloc") ||
      !ok(cudaMalloc(&sink, sizeof(float) * 256 * sms), "cudaMalloc"))
    return 1;
  cudaEvent_t ev0, ev1;
  if (!ok(cudaEventCreate(&ev0), "cudaEventCreate") || !ok(cudaEventCreate(&ev1), "cudaEventCreate"))
    return 1;
  // 4096 flop per clock and SM: dense bf16 wgmma (989 TFLOP/s at 1.83 GHz on 132 SMs).
  constexpr double kPeakPerClock = 4096.0;
  std::printf("%d SMs, max SM clock %.0f MHz; %d repetitions per CTA, one CTA per SM\n", sms,
              clock_khz / 1e3, kReps);
  std::printf("%-40s %10s %12s %9s %10s\n", "chain (per repetition)", "clk/rep", "flop/clk/SM",
              "% peak", "TFLOP/s");
  std::vector<unsigned long long> h(2 * sms);
  for (int m = 0; m < kNumModes; ++m) {
    if (!ok(cudaFuncSetAttribute(kKernels[m], cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem),
            "cudaFuncSetAttribute"))
      return 1;
    kKernels[m]<<<sms, 256, kSmem>>>(clocks, sink);  // warm-up
    if (!ok(cudaGetLastError(), "launch") || !ok(cudaEventRecord(ev0), "cudaEventRecord"))
      return 1;
    kKernels[m]<<<sms, 256, kSmem>>>(clocks, sink);
    if (!ok(cudaGetLastError(), "launch") || !ok(cudaEventRecord(ev1), "cudaEventRecord") ||
        !ok(cudaEventSynchronize(ev1), "cudaEventSynchronize"))
      return 1;
    float ms = 0.0f;
    if (!ok(cudaEventElapsedTime(&ms, ev0, ev1), "cudaEventElapsedTime") ||
        !ok(cudaMemcpy(h.data(), clocks, sizeof(unsigned long long) * h.size(),
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy"))
      return 1;
    unsigned long long slowest = 0;  // the slowest warpgroup of any CTA
    for (unsigned long long c : h) slowest = c > slowest ? c : slowest;
    const double per_rep = static_cast<double>(slowest) / kReps;
    const double per_clock = kModes[m].flop / per_rep;
    std::printf("%-40s %10.0f %12.0f %8.1f%% %10.1f\n", kModes[m].name, per_rep, per_clock,
                100.0 * per_clock / kPeakPerClock,
                kModes[m].flop * kReps * sms / (ms * 1e-3) / 1e12);
  }
  return 0;
}
