// racecheck_probe.cu — does compute-sanitizer racecheck model the ordering of `bar.arrive`?
// A minimal copy of the warpgroup hand-offs of kernels/cuda/decode_mla_wgmma.cu (named barriers
// used producer/consumer style, then an epilogue behind __syncthreads), with no repo dependency.
//
// Build (CMake target racecheck_probe in CUDA builds, or alone) and run from the repository root:
//   nvcc -std=c++20 -O2 -arch=sm_90 -lineinfo tests/bench/racecheck_probe.cu -o racecheck_probe
//   compute-sanitizer --tool racecheck ./racecheck_probe MODE
// scripts/gpu-sanitize.sh runs every mode under racecheck. Exit status: 0 PASS, 1 FAIL (wrong
// output), 2 usage, 3 a CUDA call failed.
//
// 2 blocks of 256 threads, WG0 = threads 0-127, WG1 = threads 128-255. Loop: 8 iterations of a
// ping-pong over a 64-float ring; threads of WG0 with (tid & 3) == 0 write it, every WG1 thread
// reads two entries and accumulates. Full (id 1): WG0 -> WG1, ring written; Empty (id 2): WG1 ->
// WG0, ring read (not signalled after the last iteration). Epilogue: WG0 writes rowm, then
// __syncthreads(), then all 256 threads read it and write out[].
// Modes (the racecheck outcome each is meant to show):
//   arrive         producers `bar.arrive`, consumers `bar.sync`: correct. Hazards here are
//                  racecheck not modelling arrive-based ordering.
//   sync           every `bar.arrive` replaced by `bar.sync` (same id and count): correct, and
//                  racecheck must report 0 hazards.
//   epilogue       the arrive loop hands off through a global-memory ring, which racecheck does not
//                  track: the epilogue's rowm is the only shared memory. Hazards here mean the
//                  arrive loop confuses racecheck's model of __syncthreads.
//   epilogue-sync  the same with the sync loop: must report 0 hazards.
//   race           positive control: no barrier at all in the loop (shared ring). Racecheck must
//                  report hazards; the output is not checked.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kThreads = 256, kWgThreads = 128, kRows = 64, kIters = 8, kBlocks = 2;
constexpr int kBarFull = 1, kBarEmpty = 2;  // 0 is __syncthreads

enum class Mode { kArrive, kSync, kEpilogue, kEpilogueSync, kRace };

// Small integers and quarters: every value and sum below is exact in float, so the check is
// exact whatever the order of additions.
__host__ __device__ constexpr float handed(int block, int it, int r) {
  return static_cast<float>(block * 1000 + it * kRows + r);
}
__host__ __device__ constexpr float row_value(int block, int r) {
  return static_cast<float>(block * 100 + r) + 0.25f;
}

// =================================================================================================
// CPU reference
// =================================================================================================

std::vector<float> expected_output() {
  std::vector<float> out(kBlocks * kThreads);
  for (int b = 0; b < kBlocks; ++b)
    for (int t = 0; t < kThreads; ++t) {
      float acc = 0.0f;
      if (t >= kWgThreads) {
        const int u = t - kWgThreads;
        for (int it = 0; it < kIters; ++it)
          acc += handed(b, it, u % kRows) + handed(b, it, (u + 32) % kRows);
      }
      out[b * kThreads + t] = row_value(b, t % kRows) + acc;
    }
  return out;
}

// =================================================================================================
// GPU kernel
// =================================================================================================

__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}
// The producer's signal: arrive (the decode kernel's pattern) or a full sync of both warpgroups.
template <bool kArrive>
__device__ __forceinline__ void signal(int id) {
  if constexpr (kArrive)
    named_arrive(id, kThreads);
  else
    named_sync(id, kThreads);
}

// kArrive: producers arrive (else sync); kRacy: no barrier in the loop; kGlobalRing: the loop's
// ring is in global memory (invisible to racecheck), else in shared memory.
template <bool kArrive, bool kRacy, bool kGlobalRing>
__global__ void __launch_bounds__(kThreads) probe_kernel(float* out, float* ring_global) {
  __shared__ float ring_shared[kRows];
  __shared__ float rowm[kRows];
  const int tid = threadIdx.x, wg = tid / kWgThreads, b = blockIdx.x;
  // volatile: one store/load per iteration as written, also in race mode where no barrier's
  // memory clobber pins them.
  volatile float* ring;
  if constexpr (kGlobalRing)
    ring = ring_global + b * kRows;
  else
    ring = ring_shared;
  const bool writer = wg == 0 && (tid & 3) == 0;
  const int r = 2 * (tid >> 2);  // a writer's two rows (WG0 only)

  float acc = 0.0f;
  for (int it = 0; it < kIters; ++it) {
    if (wg == 0) {
      if (!kRacy && it > 0) named_sync(kBarEmpty, kThreads);  // WG1 is done with it - 1
      if (writer) {
        ring[r] = handed(b, it, r);
        ring[r + 1] = handed(b, it, r + 1);
      }
      if (!kRacy) signal<kArrive>(kBarFull);
    } else {
      if (!kRacy) named_sync(kBarFull, kThreads);
      const int u = tid - kWgThreads;
      acc += ring[u % kRows] + ring[(u + 32) % kRows];
      if (!kRacy && it + 1 < kIters) signal<kArrive>(kBarEmpty);
    }
  }

  if (writer) {
    rowm[r] = row_value(b, r);
    rowm[r + 1] = row_value(b, r + 1);
  }
  __syncthreads();
  out[b * kThreads + tid] = rowm[tid % kRows] + acc;
}

// =================================================================================================
// Host driver
// =================================================================================================

#define CK(x)                                                                                  \
  do {                                                                                         \
    const cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "racecheck_probe: %s failed: %s (line %d)\n", #x,                   \
                   cudaGetErrorString(e_), __LINE__);                                          \
      std::exit(3);                                                                            \
    }                                                                                          \
  } while (0)

bool parse_mode(const char* s, Mode& m) {
  static const struct {
    const char* name;
    Mode mode;
  } kModes[] = {{"arrive", Mode::kArrive},
                {"sync", Mode::kSync},
                {"epilogue", Mode::kEpilogue},
                {"epilogue-sync", Mode::kEpilogueSync},
                {"race", Mode::kRace}};
  for (const auto& e : kModes)
    if (std::strcmp(s, e.name) == 0) {
      m = e.mode;
      return true;
    }
  return false;
}

void launch(Mode m, float* out, float* ring) {
  switch (m) {
    case Mode::kArrive: probe_kernel<true, false, false><<<kBlocks, kThreads>>>(out, ring); break;
    case Mode::kSync: probe_kernel<false, false, false><<<kBlocks, kThreads>>>(out, ring); break;
    case Mode::kEpilogue: probe_kernel<true, false, true><<<kBlocks, kThreads>>>(out, ring); break;
    case Mode::kEpilogueSync:
      probe_kernel<false, false, true><<<kBlocks, kThreads>>>(out, ring);
      break;
    case Mode::kRace: probe_kernel<true, true, false><<<kBlocks, kThreads>>>(out, ring); break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Mode mode{};
  if (argc != 2 || !parse_mode(argv[1], mode)) {
    std::fprintf(stderr, "usage: racecheck_probe arrive|sync|epilogue|epilogue-sync|race\n");
    return 2;
  }
  const char* name = argv[1];
  const size_t out_bytes = sizeof(float) * kBlocks * kThreads;
  float *out = nullptr, *ring = nullptr;
  CK(cudaMalloc(&out, out_bytes));
  CK(cudaMalloc(&ring, sizeof(float) * kBlocks * kRows));
  CK(cudaMemset(out, 0xff, out_bytes));  // NaN: an unwritten output fails the check
  CK(cudaMemset(ring, 0, sizeof(float) * kBlocks * kRows));
  launch(mode, out, ring);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> got(kBlocks * kThreads);
  CK(cudaMemcpy(got.data(), out, out_bytes, cudaMemcpyDeviceToHost));
  CK(cudaFree(out));
  CK(cudaFree(ring));

  if (mode == Mode::kRace) {  // racy by construction: only racecheck's report matters
    std::printf("racecheck_probe %s: PASS (output not checked)\n", name);
    return 0;
  }
  const std::vector<float> want = expected_output();
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i]) && ++bad <= 5)
      std::fprintf(stderr, "racecheck_probe %s: block %zu thread %zu: got %g, want %g\n", name,
                   i / kThreads, i % kThreads, got[i], want[i]);
  if (bad)
    std::fprintf(stderr, "racecheck_probe %s: %d of %zu outputs wrong\n", name, bad, want.size());
  std::printf("racecheck_probe %s: %s\n", name, bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
