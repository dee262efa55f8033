// cuda_memory.cpp — CudaMemory, the raw GPU memory of CudaDevice (see cuda_memory.h).
#include "device/cuda/cuda_memory.h"

#include <sys/resource.h>

#include "util/cuda_check.h"

namespace kv {

void* CudaMemory::raw_alloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so the next launch check does not see it
    return nullptr;
  }
  KV_CUDA_CHECK("alloc", e);
  // Zero once. Nothing else can use p yet, so no ordering with the op stream is needed; the side
  // stream is never captured, so this runs now even while the op stream is being captured.
  try {
    KV_CUDA_CHECK("alloc (zeroing fresh memory)", cudaMemsetAsync(p, 0, bytes, zero_stream_));
    KV_CUDA_CHECK("alloc (zeroing fresh memory)", cudaStreamSynchronize(zero_stream_));
  } catch (...) {
    (void)cudaFree(p);  // the allocator never saw p: give it back here
    throw;
  }
  return p;
}

void CudaMemory::raw_free(void* p) {
  KV_CUDA_CHECK("alloc (freeing cached buffers after out of memory)", cudaFree(p));
}

void CudaMemory::quiesce() {
  // A released buffer may still be read by ops in flight (release only promises stream order).
  KV_CUDA_CHECK("alloc (waiting for the ops before freeing cached buffers)",
                cudaStreamSynchronize(op_stream_));
}

std::string CudaMemory::out_of_memory(size_t bytes, size_t cached_bytes) const {
  size_t free_b = 0, total_b = 0;
  (void)cudaMemGetInfo(&free_b, &total_b);
  (void)cudaGetLastError();
  const auto mib = [](size_t b) { return std::to_string(b >> 20) + " MiB"; };
  // The driver maps each allocation into the process's address space too (measured: VmSize grows
  // by the bytes allocated): with the GPU's memory free, a `ulimit -v` may be what ran out.
  rlimit as{};
  std::string limit;
  if (free_b >= bytes && ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    limit = "; with that much free, this process's `ulimit -v` (RLIMIT_AS) of " +
            mib(as.rlim_cur) + " may be what ran out: the CUDA driver maps each allocation into "
            "the address space (raise it: `ulimit -v unlimited`)";
  return "cuda alloc: out of GPU memory: asked for " + std::to_string(bytes) +
         " bytes; the GPU has " + mib(free_b) + " free of " + mib(total_b) + ", kvcheck holds " +
         mib(cached_bytes) + " in released buffers" + limit +
         ". Hint: lower cache.num_blocks or the batch sizes of the scenario, or free the GPU of "
         "other processes (nvidia-smi)";
}

}  // namespace kv
