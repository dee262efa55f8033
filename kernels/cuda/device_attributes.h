// device_attributes.h — the attributes of the current CUDA device that the launchers of
// kernels/cuda size grids and choose shapes by (SM count, opt-in shared memory, compute
// capability): read once per device and cached here, the one such cache of the library.
//
// Host C++ on the CUDA runtime API, no device code. cudaDeviceGetAttribute is not a stream
// operation, so a read is legal while a stream is being captured into a graph. The functions are
// inline and their caches function-local statics: one object for every file that includes this.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>

namespace kv::cuda {

inline constexpr int kMaxDevices = 64;

// The current device's ordinal; 0 when it cannot be read or is kMaxDevices or more.
inline int current_device() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) (void)cudaGetLastError();
  return dev >= 0 && dev < kMaxDevices ? dev : 0;
}

// Attribute A of the current device, read once per device; `fallback` when it cannot be read (or
// reads as <= 0), not cached, so that a later call tries again. A failed read is cleared from the
// runtime's last error, so that the next launch check does not report it.
template <cudaDeviceAttr A>
inline int device_attribute(int fallback) {
  static std::atomic<int> cached[kMaxDevices] = {};
  const int dev = current_device();
  int v = cached[dev].load(std::memory_order_relaxed);
  if (v > 0) return v;
  if (cudaDeviceGetAttribute(&v, A, dev) != cudaSuccess || v <= 0) {
    (void)cudaGetLastError();
    return fallback;
  }
  cached[dev].store(v, std::memory_order_relaxed);
  return v;
}

// Multiprocessors of the current device; 0 when unknown.
inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(0); }

// The opt-in shared memory per block; unknown: the 48 KB every device has.
inline int smem_optin() {
  return device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(48 * 1024);
}

// The major compute capability; 0 when unknown.
inline int compute_capability_major() {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>(0);
}

}  // namespace kv::cuda
