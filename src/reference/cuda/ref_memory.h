// ref_memory.h — device and pinned host memory the GPU reference owns, freed with it; growing
// buffers double so that a buffer that grows run after run does not free every time.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "util/cuda_check.h"
#include "util/device_error.h"

namespace kv::refgpu_impl {

// Device memory the reference owns, freed with it.
class DevMem {
 public:
  DevMem() = default;
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  ~DevMem() { release(); }
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Grows to at least `bytes` (contents lost); counts what it holds in `held`. Growing again,
  // it takes twice what it had at least: cudaFree waits for the whole device (the engine's
  // step running beside the checks included), so a buffer that grows run after run (the slot
  // table, hash ranges, a step's outputs) must not free every time.
  void reserve(size_t bytes, const char* what, int64_t& held) {
    if (bytes <= bytes_) return;
    if (bytes_ > 0) bytes = std::max(bytes, 2 * bytes_);
    held -= static_cast<int64_t>(bytes_);
    release();
    const cudaError_t e = cudaMalloc(&p_, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      p_ = nullptr;
      throw OutOfMemory(fmt::format(
          "the GPU reference could not allocate {} bytes for {} ({}): the full reference does "
          "not fit next to the engine; run with --reference auto (falls back to the sampled "
          "reference) or --reference sampled",
          bytes, what, cudaGetErrorString(e)));
    }
    bytes_ = bytes;
    held += static_cast<int64_t>(bytes);
  }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host memory for the asynchronous copies.
class PinnedMem {
 public:
  PinnedMem() = default;
  PinnedMem(const PinnedMem&) = delete;
  PinnedMem& operator=(const PinnedMem&) = delete;
  ~PinnedMem() {
    if (p_) cudaFreeHost(p_);
  }
  void reserve(size_t bytes) {  // growing again: twice what it had at least (as DevMem)
    if (bytes <= bytes_) return;
    if (bytes_ > 0) bytes = std::max(bytes, 2 * bytes_);
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    KV_CUDA_CHECK("reference pinned buffer", cudaMallocHost(&p_, bytes));
    bytes_ = bytes;
  }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace kv::refgpu_impl
