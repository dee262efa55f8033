// bench_fill.cu — random device fills for kvbench_decode: a splitmix64 hash of (seed, index) per
// element, converted with the bit-exact conversions of kernels/dtype.cuh. Built into
// kvbench_decode (tests/bench/CMakeLists.txt).
#include <algorithm>

#include "tests/bench/bench_cuda.h"

namespace kv::bench {
namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_uniform_kernel(void* dst, size_t n, DType t, float lo, float hi, float scale,
                                    uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t r = splitmix64(seed * 0x2545f4914f6cdd1dull + i);
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    store_from_f32(dst, int64_t(i), t, (lo + (hi - lo) * u) / scale);
  }
}

}  // namespace

void fill_uniform(void* dst, size_t elems, DType dtype, float lo, float hi, float scale,
                  uint64_t seed, cudaStream_t stream) {
  if (elems == 0) return;
  const unsigned blocks = unsigned(std::min<size_t>((elems + 255) / 256, 132 * 64));
  fill_uniform_kernel<<<blocks, 256, 0, stream>>>(dst, elems, dtype, lo, hi, scale, seed);
  BENCH_CUDA(cudaGetLastError());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace kv::bench
