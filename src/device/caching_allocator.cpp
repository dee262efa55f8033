// caching_allocator.cpp — CachingAllocator (see caching_allocator.h).
#include "device/caching_allocator.h"

#include "device/device.h"

namespace kv {

CachingAllocator::~CachingAllocator() {
  const auto give_back = [this](void* p) {
    try {
      raw_.raw_free(p);
    } catch (...) {  // teardown goes on: the rest is still given back
    }
  };
  for (const auto& [p, buf] : live_) give_back(p);
  for (const auto& [key, buffers] : free_)
    for (void* p : buffers) give_back(p);
}

void* CachingAllocator::alloc(size_t bytes) {
  const size_t cls = size_class(bytes);
  if (cls < bytes)
    throw DeviceError(device_ + " alloc: size overflow (" + std::to_string(bytes) + " bytes)");
  void* p = nullptr;
  auto it = free_.find({pool_, cls});
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();  // most recently released first, like a GPU caching allocator
    it->second.pop_back();
    ++reuses_;
  } else {
    p = fresh(cls, bytes);
  }
  live_[p] = Buffer{cls, pool_};
  return p;
}

void* CachingAllocator::fresh(size_t cls, size_t bytes) {
  void* p = raw_.raw_alloc(cls);
  if (!p && !in_graph_pool() && cached_bytes(kGeneralPool) > 0) {
    free_general_cache();
    p = raw_.raw_alloc(cls);
  }
  if (!p) throw OutOfMemory(raw_.out_of_memory(bytes, cached_bytes()));
  ++fresh_allocs_;
  return p;
}

void CachingAllocator::free_general_cache() {
  raw_.quiesce();  // a released buffer may still be read by ops in flight
  for (auto it = free_.begin(); it != free_.end();) {
    if (it->first.first != kGeneralPool) {
      ++it;
      continue;
    }
    // Drop each buffer from the list before freeing it, so a throw leaves no freed pointer cached.
    while (!it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      raw_.raw_free(p);
      ++raw_frees_;
    }
    it = free_.erase(it);
  }
}

void CachingAllocator::release(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end())
    throw DeviceError(device_ + " release: not a live allocation of this device");
  // A graph pool's buffer goes back to that pool only: a replay may still write to it.
  free_[{it->second.pool, it->second.size_class}].push_back(p);
  live_.erase(it);
}

void CachingAllocator::begin_graph_pool() {
  if (in_graph_pool()) throw DeviceError(device_ + " allocator: a graph pool is already open");
  pool_ = next_graph_pool_++;
}

void CachingAllocator::end_graph_pool() {
  if (!in_graph_pool()) throw DeviceError(device_ + " allocator: no graph pool is open");
  pool_ = kGeneralPool;
}

size_t CachingAllocator::cached_bytes() const {
  size_t n = 0;
  for (const auto& [key, buffers] : free_) n += key.second * buffers.size();
  return n;
}

size_t CachingAllocator::cached_bytes(int pool) const {
  size_t n = 0;
  for (const auto& [key, buffers] : free_)
    if (key.first == pool) n += key.second * buffers.size();
  return n;
}

AllocatorStats CachingAllocator::stats() const {
  AllocatorStats s;
  s.live_buffers = live_.size();
  for (const auto& [p, buf] : live_) s.live_bytes += buf.size_class;
  for (const auto& [key, buffers] : free_) s.cached_buffers += buffers.size();
  s.cached_bytes = cached_bytes();
  s.fresh_allocs = fresh_allocs_;
  s.reuses = reuses_;
  s.raw_frees = raw_frees_;
  s.graph_pools = static_cast<size_t>(next_graph_pool_);
  return s;
}

}  // namespace kv
