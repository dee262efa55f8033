// bench_cuda.h — what the kvbench_decode sources share: a CUDA call check that names the call and
// the place, an owning device buffer, event timing, and random device fills (bench_fill.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/dtype.cuh"

namespace kv::bench {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
#define BENCH_CUDA(call)                                                        \
  do {                                                                          \
    const cudaError_t bench_e_ = (call);                                        \
    if (bench_e_ != cudaSuccess) ::kv::bench::cuda_fail(bench_e_, #call, __FILE__, __LINE__); \
  } while (0)

// Device memory owned by one object; moves, never copies.
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(size_t bytes) : bytes_(bytes) {
    if (bytes) BENCH_CUDA(cudaMalloc(&p_, bytes));
  }
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p_) cudaFree(p_);
  }
  template <typename T = void>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T>
DevBuf upload(const std::vector<T>& v) {
  DevBuf b(v.size() * sizeof(T));
  if (!v.empty()) BENCH_CUDA(cudaMemcpy(b.as(), v.data(), b.bytes(), cudaMemcpyHostToDevice));
  return b;
}

template <typename T>
std::vector<T> download(const DevBuf& b, size_t n) {
  std::vector<T> v(n);
  if (n) BENCH_CUDA(cudaMemcpy(v.data(), b.as(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// Milliseconds between two events recorded around work on `stream`.
class EventTimer {
 public:
  EventTimer() {
    BENCH_CUDA(cudaEventCreate(&a_));
    BENCH_CUDA(cudaEventCreate(&b_));
  }
  ~EventTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  void start(cudaStream_t s) { BENCH_CUDA(cudaEventRecord(a_, s)); }
  float stop_ms(cudaStream_t s) {
    BENCH_CUDA(cudaEventRecord(b_, s));
    BENCH_CUDA(cudaEventSynchronize(b_));
    float ms = 0.0f;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a_, b_));
    return ms;
  }

 private:
  cudaEvent_t a_{}, b_{};
};

// Random device fills from a counter hash (seeded), values uniform in [lo, hi) before conversion:
// never zero-filled data (it hides unwritten outputs and can run faster than real data).
// `dtype` elements; fp8 values are stored as x / scale (what write_kv would store).
void fill_uniform(void* dst, size_t elems, DType dtype, float lo, float hi, float scale,
                  uint64_t seed, cudaStream_t stream);

double median(std::vector<double> v);

}  // namespace kv::bench
