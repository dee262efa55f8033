// wgmma_probe.cu — checks the building blocks of the mla_wgmma decode path on the GPU against a CPU
// loop: the shared-memory layouts, matrix descriptors, fragment maps and GEMM chains of
// kernels/cuda/mla_wgmma_tiles.cuh, the very functions decode_mla_wgmma.cu calls.
//
// Built by CUDA builds as <build>/tests/bench/wgmma_probe (sm_90a whatever CMAKE_CUDA_ARCHITECTURES
// says), or alone from the repository root; run on an H100/H200 (wgmma is sm_90a only):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I. tests/bench/wgmma_probe.cu -o wgmma_probe
//   ./wgmma_probe
// Exit status 0: every check PASS; 1: a check FAILED; 2: no compute capability 9.0 GPU.
//
// Checks, each for bf16 and f16 operands (the fp8 cache runs on f16), one warpgroup each:
//   [1] S(64x64) = Q(64x576)·K(64x576)^T: qk_chain, 36 x m64n64k16, both K-major 128-byte swizzle;
//   [2] O(64x512) = P(64x64)·V(64x512): pv_chain_rs, P from registers built by p_frag out of an
//       accumulator-shaped array (warpgroup 0's path), V MN-major (imm-trans-b), halves 0 and 1;
//   [3] the same with pv_chain_ss, P in its K-major tile written by store_p (warpgroup 1's path).
// Inputs are multiples of 1/8 in [-1, 1], so every product and sum is exact in float: a correct
// layout gives error 0. On a failure the probe prints the first mismatches and then decodes the
// layout: it reruns the GEMM with one-hot rows in A and index-coded B and says, per wrong output,
// which (row, feature) of B the hardware actually read.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/mla_wgmma_tiles.cuh"

using namespace kv::cuda::decode_detail;

namespace {

constexpr int kHD = 576, kVD = 512, kRows = 64;
// Tiles at the kernel's 1024-aligned offsets: A (Q, or unused), B (K or V), P.
constexpr int kTileBytes = 9 * kKBlockBytes;  // 73728
constexpr int kOffA = 0, kOffB = kTileBytes, kOffP = 2 * kTileBytes;
constexpr int kSmem = kOffP + kKBlockBytes + 1024;

// =================================================================================================
// CPU side: 16-bit encodings of exact values
// =================================================================================================

uint16_t to16(float x, bool f16) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (!f16) return static_cast<uint16_t>(u >> 16);  // exact for multiples of 1/8 in [-1024, 1024]
  // f16 of a value that is exact in f16 (|x| <= 1024, multiple of 1/8, or 0).
  if (x == 0.0f) return (u >> 31) ? 0x8000 : 0;
  const uint16_t sign = (u >> 31) << 15;
  const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (e << 10) | ((u >> 13) & 0x3ff));
}

// =================================================================================================
// GPU kernels: one warpgroup, the tile functions exactly as the decode kernel uses them
// =================================================================================================

__device__ uint8_t* aligned_smem() {
  extern __shared__ uint8_t smem_dyn[];
  return smem_dyn + ((1024u - (smem_u32(smem_dyn) & 1023u)) & 1023u);
}

// Row-major [rows][cols] 16-bit matrix into a 64-row SW128 tile.
__device__ void fill_tile(uint8_t* tile, const uint16_t* m, int cols) {
  for (int x = threadIdx.x; x < kRows * cols; x += blockDim.x)
    *reinterpret_cast<uint16_t*>(tile + sw128_off(x / cols, x % cols)) = m[x];
}

template <bool kF16>
__global__ void __launch_bounds__(128) qk_kernel(const uint16_t* q, const uint16_t* k, float* s) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  uint8_t* sm = aligned_smem();
  fill_tile(sm + kOffA, q, kHD);
  fill_tile(sm + kOffB, k, kHD);
  fence_proxy_async();
  __syncthreads();
  float acc[32];
  for (int i = 0; i < 32; ++i) acc[i] = 0.0f;
  fence_regs(acc);
  wgmma_fence();
  qk_chain<kF16>(acc, smem_u32(sm + kOffA), smem_u32(sm + kOffB));
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(acc);
  const int t = threadIdx.x;
  for (int i = 0; i < 32; ++i) s[acc_row(t, i) * kRows + acc_col(t, i)] = acc[i];
#else
  __trap();
#endif
}

// p: float [64][64] (values exact in 16 bits), v: 16-bit [64 tokens][576], o: float [64][512].
template <bool kF16, bool kSmemA>
__global__ void __launch_bounds__(128) pv_kernel(const float* p, const uint16_t* v, float* o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  uint8_t* sm = aligned_smem();
  const int t = threadIdx.x;
  fill_tile(sm + kOffB, v, kHD);
  // P as warpgroup 0 holds it: an m64n64 accumulator, packed by p_frag.
  float pf[32];
  for (int i = 0; i < 32; ++i) pf[i] = p[acc_row(t, i) * kRows + acc_col(t, i)];
  uint32_t pa[4][4];
  p_frag<kF16>(pf, pa);
  if (kSmemA) store_p(sm + kOffP, pa, t);  // as warpgroup 0 hands it to warpgroup 1
  fence_proxy_async();
  __syncthreads();
  for (int half = 0; half < 2; ++half) {
    float acc[128];
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    for (int kk = 0; kk < 4; ++kk) fence_regs(pa[kk]);
    fence_regs(acc);
    wgmma_fence();
    if (kSmemA)
      pv_chain_ss<kF16>(acc, smem_u32(sm + kOffP), smem_u32(sm + kOffB), half);
    else
      pv_chain_rs<kF16>(acc, pa, smem_u32(sm + kOffB), half);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(acc);
    for (int i = 0; i < 128; ++i) o[acc_row(t, i) * kVD + 256 * half + acc_col(t, i)] = acc[i];
  }
#else
  __trap();
#endif
}

// =================================================================================================
// Host driver
// =================================================================================================

#define CK(x)                                                                                    \
  do {                                                                                           \
    const cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "wgmma_probe: %s failed: %s (line %d)\n", #x, cudaGetErrorString(e_), \
                   __LINE__);                                                                    \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

template <class T>
T* to_dev(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc(&d, h.size() * sizeof(T)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// One GEMM on the GPU: [1] when pv is false (a = Q [64][576], b = K [64][576], out [64][64]),
// else [2]/[3] (a = P [64][64] as float, b = V [64][576], out [64][512]).
std::vector<float> run_gpu(bool pv, bool f16, bool smem_a, const std::vector<float>& a,
                           const std::vector<float>& b) {
  std::vector<uint16_t> b16(b.size());
  for (size_t i = 0; i < b.size(); ++i) b16[i] = to16(b[i], f16);
  const int out_n = pv ? kRows * kVD : kRows * kRows;
  float* dout = nullptr;
  CK(cudaMalloc(&dout, out_n * sizeof(float)));
  CK(cudaMemset(dout, 0xff, out_n * sizeof(float)));  // NaN: an output never written shows
  uint16_t* db = to_dev(b16);
  if (!pv) {
    std::vector<uint16_t> a16(a.size());
    for (size_t i = 0; i < a.size(); ++i) a16[i] = to16(a[i], f16);
    uint16_t* da = to_dev(a16);
    auto k = f16 ? qk_kernel<true> : qk_kernel<false>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    k<<<1, 128, kSmem>>>(da, db, dout);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaFree(da));
  } else {
    float* da = to_dev(a);
    auto k = f16 ? (smem_a ? pv_kernel<true, true> : pv_kernel<true, false>)
                 : (smem_a ? pv_kernel<false, true> : pv_kernel<false, false>);
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    k<<<1, 128, kSmem>>>(da, db, dout);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaFree(da));
  }
  std::vector<float> out(out_n);
  CK(cudaMemcpy(out.data(), dout, out_n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaFree(dout));
  CK(cudaFree(db));
  return out;
}

// The CPU loop: out[r][n] = sum_k A[r][k] * B[k][n], with B = K^T ([1]) or V ([2], [3]).
std::vector<float> run_cpu(bool pv, const std::vector<float>& a, const std::vector<float>& b) {
  const int n_out = pv ? kVD : kRows, n_k = pv ? kRows : kHD;
  std::vector<float> out(static_cast<size_t>(kRows) * n_out);
  for (int r = 0; r < kRows; ++r)
    for (int n = 0; n < n_out; ++n) {
      double acc = 0.0;
      for (int k = 0; k < n_k; ++k)
        acc += static_cast<double>(a[r * n_k + k]) * (pv ? b[k * kHD + n] : b[n * kHD + k]);
      out[static_cast<size_t>(r) * n_out + n] = static_cast<float>(acc);
    }
  return out;
}

// Index-coded runs: A one-hot per row at column sel(r); B's entries are a coordinate of their own
// (row, column) — run c = 0 codes the row, 1 the column % 64, 2 the column / 64 — so out[r][n]
// names the B element the hardware multiplied with A's one. Prints what each wrong output read.
void decode_layout(bool pv, bool f16, bool smem_a) {
  const int n_k = pv ? kRows : kHD, n_out = pv ? kVD : kRows;
  auto sel = [&](int r) { return pv ? (5 * r + 3) % kRows : (9 * r) % kHD; };
  std::vector<float> a(static_cast<size_t>(kRows) * n_k, 0.0f);
  for (int r = 0; r < kRows; ++r) a[r * n_k + sel(r)] = 1.0f;
  std::vector<float> got[3];
  for (int c = 0; c < 3; ++c) {
    std::vector<float> b(static_cast<size_t>(kRows) * kHD);
    for (int row = 0; row < kRows; ++row)
      for (int f = 0; f < kHD; ++f) b[row * kHD + f] = c == 0 ? row : (c == 1 ? f % 64 : f / 64);
    got[c] = run_gpu(pv, f16, smem_a, a, b);
  }
  int shown = 0, wrong = 0;
  for (int r = 0; r < kRows; ++r)
    for (int n = 0; n < n_out; ++n) {
      // Expected B element: [1] K[n][sel(r)] (token n, feature sel(r)); [2] V[sel(r)][n].
      const int exp_row = pv ? sel(r) : n, exp_feat = pv ? n : sel(r);
      const size_t i = static_cast<size_t>(r) * n_out + n;
      const float gr = got[0][i], gf = got[1][i] + 64.0f * got[2][i];
      if (gr == exp_row && gf == exp_feat) continue;
      ++wrong;
      if (shown++ < 12)
        std::printf(
            "      out[%d][%d] read B(row %g, feature %g), expected B(row %d, feature %d)\n", r, n,
            gr, gf, exp_row, exp_feat);
    }
  std::printf("      layout decode: %d of %d outputs read the wrong B element%s\n", wrong,
              kRows * n_out, wrong ? "" : " (so A's side or the sums are wrong)");
}

int failures = 0;

void check(const char* name, bool pv, bool f16, bool smem_a, std::mt19937& rng) {
  std::uniform_int_distribution<int> d8(-8, 8);
  const int n_k = pv ? kRows : kHD, n_out = pv ? kVD : kRows;
  std::vector<float> a(static_cast<size_t>(kRows) * n_k), b(static_cast<size_t>(kRows) * kHD);
  for (float& x : a) x = d8(rng) / 8.0f;
  for (float& x : b) x = d8(rng) / 8.0f;
  const std::vector<float> got = run_gpu(pv, f16, smem_a, a, b);
  const std::vector<float> want = run_cpu(pv, a, b);
  double max_err = 0.0;
  int bad = 0, first_r = -1, first_c = -1;
  std::vector<int> bad_rows(kRows, 0), bad_cols(n_out, 0);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < n_out; ++c) {
      const size_t i = static_cast<size_t>(r) * n_out + c;
      const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
      if (!(e <= 1e-3)) {  // NaN (never written) counts as wrong
        if (bad++ == 0) first_r = r, first_c = c;
        bad_rows[r] = 1, bad_cols[c] = 1;
      }
      if (e > max_err || e != e) max_err = e != e ? INFINITY : e;
    }
  std::printf("%-62s %s  max|err| %-8.3g %s\n", name, f16 ? "f16 " : "bf16", max_err,
              bad ? "FAIL" : "PASS");
  if (!bad) return;
  ++failures;
  int nr = 0, nc = 0;
  for (int x : bad_rows) nr += x;
  for (int x : bad_cols) nc += x;
  std::printf(
      "      %d of %d outputs wrong, in %d rows and %d columns; first (row %d, col %d): "
      "expected %g, got %g\n",
      bad, kRows * n_out, nr, nc, first_r, first_c,
      want[static_cast<size_t>(first_r) * n_out + first_c],
      got[static_cast<size_t>(first_r) * n_out + first_c]);
  std::printf("      wrong rows:");
  for (int r = 0; r < kRows; ++r)
    if (bad_rows[r]) std::printf(" %d", r);
  std::printf("\n");
  decode_layout(pv, f16, smem_a);
}

// Host-side checks of the pure functions both sides rely on.
void check_host_functions() {
  int bad = 0;
  for (int r = 0; r < kRows; ++r)
    for (int f = 0; f < kHD; ++f)
      if (sw128_off(r, f) != sw128_chunk(r, f / 8) + (f % 8) * 2) ++bad;
  // Every element of a tile has its own 2 bytes.
  std::vector<int> seen(kTileBytes / 2, 0);
  for (int r = 0; r < kRows; ++r)
    for (int f = 0; f < kHD; ++f) seen[sw128_off(r, f) / 2]++;
  for (int x : seen) bad += x != 1;
  // Fragment maps: each thread/register pair owns one distinct element.
  std::vector<int> own(kRows * kRows, 0);
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 32; ++i) own[acc_row(t, i) * kRows + acc_col(t, i)]++;
  for (int x : own) bad += x != 1;
  const uint64_t dk = desc_kmajor(0x12400), dm = desc_mnmajor(0x12400);
  auto field = [](uint64_t d, int lo, int bits) {
    return static_cast<unsigned>((d >> lo) & ((1ull << bits) - 1));
  };
  std::printf("%-62s       %s\n", "[0] host: swizzle offsets, fragment maps (one owner each)",
              bad ? "FAIL" : "PASS");
  std::printf("      K-major desc(0x12400) = 0x%016llx: start %#x LBO %u SBO %u swizzle %u\n",
              static_cast<unsigned long long>(dk), field(dk, 0, 14) << 4, field(dk, 16, 14) << 4,
              field(dk, 32, 14) << 4, field(dk, 62, 2));
  std::printf("      MN-major desc(0x12400) = 0x%016llx: start %#x LBO %u SBO %u swizzle %u\n",
              static_cast<unsigned long long>(dm), field(dm, 0, 14) << 4, field(dm, 16, 14) << 4,
              field(dm, 32, 14) << 4, field(dm, 62, 2));
  if (bad) ++failures;
}

}  // namespace

int main() {
  int dev = 0, major = 0, minor = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    std::fprintf(stderr, "wgmma_probe: no CUDA device\n");
    return 2;
  }
  major = prop.major, minor = prop.minor;
  std::printf("wgmma_probe: %s (compute capability %d.%d), kernels/cuda/mla_wgmma_tiles.cuh\n",
              prop.name, major, minor);
  if (major != 9 || minor != 0) {
    std::fprintf(stderr, "wgmma_probe: wgmma needs compute capability 9.0 (sm_90a)\n");
    return 2;
  }
  check_host_functions();
  std::mt19937 rng(20261122);
  for (int f16 = 0; f16 < 2; ++f16) {
    check("[1] S=Q.K^T   qk_chain 36x m64n64k16, Q,K K-major SW128", false, f16, false, rng);
    check("[2] O=P.V     pv_chain_rs m64n256k16, P regs (p_frag), V MN-major", true, f16, false,
          rng);
    check("[3] O=P.V     pv_chain_ss m64n256k16, P tile (store_p), V MN-major", true, f16, true,
          rng);
  }
  std::printf("wgmma_probe: %s\n", failures ? "FAILED" : "ALL PASS");
  return failures ? 1 : 0;
}
