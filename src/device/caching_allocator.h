// caching_allocator.h — the memory of every device: a caching allocator with size classes and
// per-graph pools over a RawMemory backend, so stale-data bugs reproduce the same on host and GPU.
//
// The rules (the memory semantics of src/device/device.h):
//   - sizes round up to 256-byte classes (0 bytes is one class, a real buffer);
//   - release() keeps the buffer: the next alloc() of that class in the same pool gets it back,
//     old bytes and all, most recently released first; otherwise memory is fresh (zero);
//   - between begin_graph_pool() and end_graph_pool() (a graph's capture) alloc() draws from that
//     graph's private pool. A buffer of a graph pool goes back to that pool when released, and the
//     pool is never current again: no later allocation ever receives it (a replay may still write
//     to it). Pools are kept until the allocator is destroyed, like the graphs.
//   - when the backend runs out outside a capture, the cached buffers of the general pool are
//     given back (after RawMemory::quiesce) and the alloc is tried once more; then DeviceError with
//     the backend's message. Never during a capture: freeing GPU memory synchronises the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/raw_memory.h"

namespace kv {

struct AllocatorStats {
  size_t live_buffers = 0;    // handed out and not yet released
  size_t live_bytes = 0;      // their size classes, summed
  size_t cached_buffers = 0;  // released, kept for reuse (every pool)
  size_t cached_bytes = 0;
  uint64_t fresh_allocs = 0;  // served by RawMemory::raw_alloc
  uint64_t reuses = 0;        // served by a released buffer
  uint64_t raw_frees = 0;     // cached buffers given back after the backend ran out
  size_t graph_pools = 0;     // captures so far
  size_t reserved_bytes() const { return live_bytes + cached_bytes; }
};

class CachingAllocator {
 public:
  static constexpr size_t kSizeClass = 256;

  // `raw` must outlive the allocator. `device` names it in messages: "<device> alloc: ...".
  CachingAllocator(RawMemory& raw, std::string device) : raw_(raw), device_(std::move(device)) {}
  ~CachingAllocator();  // raw_free of every buffer, live or cached; never throws
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* alloc(size_t bytes);
  void release(void* p);  // nullptr: a no-op; a pointer it did not hand out: DeviceError

  void begin_graph_pool();  // a new private pool becomes current
  void end_graph_pool();    // the general pool becomes current again
  bool in_graph_pool() const { return pool_ != kGeneralPool; }

  size_t live_buffers() const { return live_.size(); }
  size_t cached_bytes() const;  // released buffers kept for reuse, all pools
  AllocatorStats stats() const;

  static size_t size_class(size_t bytes) {
    const size_t b = bytes == 0 ? 1 : bytes;
    return (b + kSizeClass - 1) / kSizeClass * kSizeClass;
  }

 private:
  static constexpr int kGeneralPool = -1;  // pools >= 0 are graphs' private pools

  struct Buffer {
    size_t size_class = 0;
    int pool = kGeneralPool;
  };

  void* fresh(size_t cls, size_t bytes);
  size_t cached_bytes(int pool) const;
  void free_general_cache();

  RawMemory& raw_;
  std::string device_;
  int pool_ = kGeneralPool;
  int next_graph_pool_ = 0;
  std::unordered_map<void*, Buffer> live_;
  std::map<std::pair<int, size_t>, std::vector<void*>> free_;  // (pool, size class) -> buffers
  uint64_t fresh_allocs_ = 0;
  uint64_t reuses_ = 0;
  uint64_t raw_frees_ = 0;
};

}  // namespace kv
