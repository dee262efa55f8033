// cuda_allocator.h — CudaDevice's caching allocator: GPU memory with the host device's semantics.
//
// Same rules as HostDevice (src/device/host_device.h), so stale-data bugs reproduce identically:
//   - sizes round up to 256-byte classes; release() keeps the buffer, and the next alloc() of that
//     class (and pool) gets it back, old bytes and all, most recently released first;
//   - fresh memory comes from cudaMalloc and is zeroed once (cudaMemsetAsync on a side stream that
//     is never captured, then synchronised), so it reads as zero like the host's calloc;
//   - a buffer allocated while a graph is being captured belongs to that graph's pool and is never
//     handed to an allocation outside that capture (a replay may still write to it).
// Unlike the host it can run out: on cudaErrorMemoryAllocation outside a capture it frees the
// cached (released, general-pool) buffers and tries once more, then throws DeviceError with the
// size asked and the free/total memory. cudaFree synchronises the device, so never during capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kv {

class CudaAllocator {
 public:
  static constexpr int kGeneralPool = -1;  // pools >= 0 are graphs' private pools
  static constexpr size_t kSizeClass = 256;

  // `op_stream`: where the ops run (synchronised before cached buffers are freed);
  // `zero_stream`: a non-blocking stream that is never captured, for zeroing fresh memory.
  CudaAllocator(cudaStream_t op_stream, cudaStream_t zero_stream)
      : op_stream_(op_stream), zero_stream_(zero_stream) {}
  ~CudaAllocator();  // cudaFree of every block ever allocated; never throws
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  // `capturing`: whether a stream capture is in progress (no cudaFree then).
  void* alloc(size_t bytes, int pool, bool capturing);
  void release(void* p);

  size_t live_buffers() const { return live_.size(); }
  size_t cached_bytes() const;  // released buffers kept for reuse, all pools

  static size_t size_class(size_t bytes) {
    const size_t b = bytes == 0 ? 1 : bytes;
    return (b + kSizeClass - 1) / kSizeClass * kSizeClass;
  }

 private:
  struct Buffer {
    size_t size_class = 0;
    int pool = kGeneralPool;
  };

  void* fresh(size_t cls);  // nullptr when cudaMalloc reports out of memory
  void free_general_cache();

  cudaStream_t op_stream_;
  cudaStream_t zero_stream_;
  std::unordered_map<void*, Buffer> live_;
  std::map<std::pair<int, size_t>, std::vector<void*>> free_;  // (pool, size class) -> buffers
  std::unordered_map<void*, size_t> owned_;  // every block cudaMalloc'ed and not yet freed
};

}  // namespace kv
