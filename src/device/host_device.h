// host_device.h — the CPU device: runs the host ops of kernels/host over plain memory, with
// memory and graph semantics that behave like a GPU's, so stale-data and stale-address bugs
// reproduce.
//
// Memory: a caching allocator. alloc() hands back a released buffer of the same 256-byte size
// class when there is one, old bytes and all; otherwise fresh, zeroed memory. Buffers allocated
// while capturing belong to that graph's private pool and are never handed to an alloc() outside
// that capture. Graphs: while capturing, each op is recorded as a copy of its descriptor (the
// pointers, not the data behind them); replay() runs the recorded ops in order, reading whatever
// those buffers hold at replay time.
#pragma once

#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "device/device.h"

namespace kv {

class HostDevice : public Device {
 public:
  HostDevice() = default;
  ~HostDevice() override;
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  std::string name() const override { return "host"; }

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) override;

  void write_kv(const WriteKvArgs& a) override;
  void paged_decode(const PagedDecodeArgs& a) override;
  void gather_kv(const GatherKvArgs& a) override;
  void varlen_attention(const VarlenAttnArgs& a) override;
  void merge_states(const MergeStatesArgs& a) override;
  void linear_attention(const LinearAttnArgs& a) override;
  void fill_blocks(const FillBlocksArgs& a) override;
  void quant_fp8(const QuantFp8Args& a) override;
  void embed(const EmbedArgs& a) override;
  void rms_norm(const RmsNormArgs& a) override;
  void linear(const LinearArgs& a) override;
  void argmax(const ArgmaxArgs& a) override;
  void memset_async(void* dst, size_t bytes, FillPattern pattern) override;

  void begin_capture() override;
  GraphId end_capture() override;
  void replay(GraphId g) override;
  void synchronize() override {}

  bool capturing() const { return capturing_; }
  size_t live_buffers() const { return live_.size(); }

 private:
  using Op = std::function<void()>;
  static constexpr int kGeneralPool = -1;  // pools >= 0 are graphs' private pools

  struct Buffer {
    size_t size_class = 0;
    int pool = kGeneralPool;
  };

  // Run now, or append to the graph being captured.
  void submit(Op op);
  int current_pool() const;

  std::unordered_map<void*, Buffer> live_;
  std::map<std::pair<int, size_t>, std::vector<void*>> free_;  // (pool, size class) -> buffers
  std::vector<void*> owned_;  // every block ever calloc'ed: freed in the destructor only
  std::vector<std::vector<Op>> graphs_;
  std::vector<Op> recording_;
  bool capturing_ = false;
};

}  // namespace kv
