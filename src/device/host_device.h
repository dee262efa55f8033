// host_device.h — the CPU device: runs the host ops of kernels/host over plain memory, with
// memory and graph semantics that behave like a GPU's, so stale-data and stale-address bugs
// reproduce.
//
// Memory: CachingAllocator over calloc/free (src/device/caching_allocator.h, the CUDA device's
// rules too): a released buffer of the same 256-byte size class comes back, old bytes and all;
// otherwise fresh, zeroed memory; buffers allocated while capturing belong to that graph's private
// pool and are never handed to an alloc() outside that capture. Graphs: while capturing, each op is
// recorded as a copy of its descriptor (the pointers, not the data behind them); replay() runs the
// recorded ops in order, reading whatever those buffers hold at replay time.
#pragma once

#include <functional>
#include <vector>

#include "device/caching_allocator.h"
#include "device/device.h"
#include "device/raw_memory.h"

namespace kv {

class HostDevice : public Device {
 public:
  HostDevice() = default;
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  std::string name() const override { return "host"; }
  DeviceInfo info() const override { return host_device_info(); }

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) override;

  KV_DEVICE_CACHE_OPS_OVERRIDE
  KV_DEVICE_DENSE_OPS_OVERRIDE
  void run_external(const char* op, const std::function<void(void* stream)>& fn) override;
  int32_t dl_device_type() const override { return 1; }  // kDLCPU

  void begin_capture() override;
  GraphId end_capture() override;
  void replay(GraphId g) override;
  void synchronize() override {}

  bool capturing() const { return capturing_; }
  size_t live_buffers() const { return memory_.live_buffers(); }
  AllocatorStats memory_stats() const { return memory_.stats(); }

 private:
  using Op = std::function<void()>;

  // Run now, or append to the graph being captured.
  void submit(Op op);

  HostMemory raw_;  // declared before memory_, which gives its buffers back to it
  CachingAllocator memory_{raw_, "host"};
  std::vector<std::vector<Op>> graphs_;
  std::vector<Op> recording_;
  bool capturing_ = false;
};

}  // namespace kv
