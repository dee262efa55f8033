// cuda_memory.h — CudaDevice's RawMemory: cudaMalloc / cudaFree under the CachingAllocator that
// the host device uses too (src/device/caching_allocator.h), so both have the same memory rules.
//
// Fresh memory is zeroed once (cudaMemsetAsync on a side stream that is never captured, then
// synchronised), so it reads as zero like the host's calloc, even while the op stream is being
// captured (relaxed capture mode makes cudaMalloc legal then). cudaErrorMemoryAllocation is "out
// of memory" (nullptr, the error cleared); any other failure is a DeviceError.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "device/raw_memory.h"

namespace kv {

class CudaMemory final : public RawMemory {
 public:
  // `op_stream`: where the ops run (synchronised before cached buffers are freed);
  // `zero_stream`: a non-blocking stream that is never captured, for zeroing fresh memory.
  CudaMemory(cudaStream_t op_stream, cudaStream_t zero_stream)
      : op_stream_(op_stream), zero_stream_(zero_stream) {}

  void* raw_alloc(size_t bytes) override;
  void raw_free(void* p) override;
  void quiesce() override;
  // Says how much was asked, the GPU's free and total memory, what kvcheck still caches, and what
  // to change in the scenario.
  std::string out_of_memory(size_t bytes, size_t cached_bytes) const override;

 private:
  cudaStream_t op_stream_;
  cudaStream_t zero_stream_;
};

}  // namespace kv
