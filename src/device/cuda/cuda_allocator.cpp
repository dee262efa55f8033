// cuda_allocator.cpp — the caching allocator of CudaDevice (see cuda_allocator.h).
#include "device/cuda/cuda_allocator.h"

#include <string>

#include "device/cuda/cuda_check.h"
#include "device/device.h"

namespace kv {

CudaAllocator::~CudaAllocator() {
  for (const auto& [p, cls] : owned_) (void)cudaFree(p);
}

size_t CudaAllocator::cached_bytes() const {
  size_t n = 0;
  for (const auto& [key, v] : free_) n += key.second * v.size();
  return n;
}

void* CudaAllocator::fresh(size_t cls) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, cls);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so the next launch check does not see it
    return nullptr;
  }
  KV_CUDA_CHECK("alloc", e);
  owned_[p] = cls;
  // Zero once, on the side stream: fresh memory must read as zero, as the host's calloc does.
  // Nothing else can use p yet, so no ordering with the op stream is needed; the side stream is
  // never captured, so this runs now even while the op stream is being captured.
  KV_CUDA_CHECK("alloc (zeroing fresh memory)", cudaMemsetAsync(p, 0, cls, zero_stream_));
  KV_CUDA_CHECK("alloc (zeroing fresh memory)", cudaStreamSynchronize(zero_stream_));
  return p;
}

void CudaAllocator::free_general_cache() {
  // A released buffer may still be read by ops in flight (release only promises stream order).
  KV_CUDA_CHECK("alloc (waiting for the ops before freeing cached buffers)",
                cudaStreamSynchronize(op_stream_));
  for (auto it = free_.begin(); it != free_.end();) {
    if (it->first.first != kGeneralPool) {
      ++it;
      continue;
    }
    for (void* p : it->second) {
      owned_.erase(p);
      KV_CUDA_CHECK("alloc (freeing cached buffers after out of memory)", cudaFree(p));
    }
    it = free_.erase(it);
  }
}

void* CudaAllocator::alloc(size_t bytes, int pool, bool capturing) {
  const size_t cls = size_class(bytes);
  if (cls < bytes) throw DeviceError("cuda alloc: size overflow (" + std::to_string(bytes) + ")");
  void* p = nullptr;
  auto it = free_.find({pool, cls});
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();  // most recently released first, as the host device does
    it->second.pop_back();
  } else {
    p = fresh(cls);
    if (!p && !capturing && cached_bytes() > 0) {
      free_general_cache();
      p = fresh(cls);
    }
    if (!p) {
      size_t free_b = 0, total_b = 0;
      (void)cudaMemGetInfo(&free_b, &total_b);
      (void)cudaGetLastError();
      const auto mib = [](size_t b) { return std::to_string(b >> 20) + " MiB"; };
      throw DeviceError("cuda alloc: out of GPU memory: asked for " + std::to_string(bytes) +
                        " bytes; the GPU has " + mib(free_b) + " free of " + mib(total_b) +
                        ", kvcheck holds " + mib(cached_bytes()) +
                        " in released buffers. Hint: lower cache.num_blocks or the batch sizes "
                        "of the scenario, or free the GPU of other processes (nvidia-smi)");
    }
  }
  live_[p] = Buffer{cls, pool};
  return p;
}

void CudaAllocator::release(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end()) throw DeviceError("cuda release: not a live allocation of this device");
  // A graph pool's buffer goes back to that pool only: a replay may still write to it.
  free_[{it->second.pool, it->second.size_class}].push_back(p);
  live_.erase(it);
}

}  // namespace kv
