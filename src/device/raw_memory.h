// raw_memory.h — the backend under CachingAllocator: where a device's fresh memory comes from and
// where it goes back. Each device gives one (the host: calloc/free here; CUDA: cudaMalloc/cudaFree
// in device/cuda/cuda_memory.h); every caching and pool rule lives in CachingAllocator, once.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace kv {

class RawMemory {
 public:
  virtual ~RawMemory() = default;

  // `bytes` of fresh memory that reads as zero, or nullptr when the memory is exhausted (the
  // allocator may then give its cached buffers back and ask again). Other failures throw.
  virtual void* raw_alloc(size_t bytes) = 0;
  virtual void raw_free(void* p) = 0;
  // Called before cached buffers are raw_free'd: wait until no op in flight can still read them.
  virtual void quiesce() {}
  // The DeviceError message for an alloc of `bytes` that failed even after the cache was given
  // back; `cached_bytes`: what the allocator still holds in released (graph-pool) buffers.
  virtual std::string out_of_memory(size_t bytes, size_t cached_bytes) const = 0;
};

// The host's backend: calloc zeroes fresh memory, as a GPU allocator's zeroing does.
class HostMemory final : public RawMemory {
 public:
  void* raw_alloc(size_t bytes) override { return std::calloc(bytes, 1); }
  void raw_free(void* p) override { std::free(p); }
  std::string out_of_memory(size_t bytes, size_t) const override {
    return "host alloc: out of memory (" + std::to_string(bytes) + " bytes)";
  }
};

}  // namespace kv
