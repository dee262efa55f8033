// host_device.cpp — HostDevice: the caching allocator, the op dispatch and the graph emulation.
#include "device/host_device.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/host/host_ops.h"

namespace kv {
namespace {

constexpr size_t kSizeClass = 256;

size_t size_class(size_t bytes) {
  const size_t b = bytes == 0 ? 1 : bytes;
  return (b + kSizeClass - 1) / kSizeClass * kSizeClass;
}

}  // namespace

HostDevice::~HostDevice() {
  for (void* p : owned_) std::free(p);
}

int HostDevice::current_pool() const {
  return capturing_ ? static_cast<int>(graphs_.size()) : kGeneralPool;
}

void* HostDevice::alloc(size_t bytes) {
  const size_t cls = size_class(bytes);
  if (cls < bytes) throw DeviceError("host alloc: size overflow");
  const int pool = current_pool();
  auto it = free_.find({pool, cls});
  void* p = nullptr;
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();  // most recently released first, like a caching allocator
    it->second.pop_back();
  } else {
    p = std::calloc(cls, 1);
    if (!p) throw DeviceError("host alloc: out of memory (" + std::to_string(bytes) + " bytes)");
    owned_.push_back(p);
  }
  live_[p] = Buffer{cls, pool};
  return p;
}

void HostDevice::release(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end()) throw DeviceError("host release: not a live allocation of this device");
  // A graph pool's buffer goes back to that pool only: no allocation outside the graph's capture
  // ever receives it, because a replay may still write to it.
  free_[{it->second.pool, it->second.size_class}].push_back(p);
  live_.erase(it);
}

void HostDevice::upload(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void HostDevice::download(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void HostDevice::fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) {
  host::fill_pattern(dst, bytes, pattern, DType::f32, seed, 0);
}

void HostDevice::submit(Op op) {
  if (capturing_)
    recording_.push_back(std::move(op));
  else
    op();
}

// Each op captures its descriptor by value: a replay sees the same pointers, new contents.
void HostDevice::write_kv(const WriteKvArgs& a) {
  submit([a] { host::write_kv(a); });
}
void HostDevice::paged_decode(const PagedDecodeArgs& a) {
  submit([a] { host::paged_decode(a); });
}
void HostDevice::gather_kv(const GatherKvArgs& a) {
  submit([a] { host::gather_kv(a); });
}
void HostDevice::varlen_attention(const VarlenAttnArgs& a) {
  submit([a] { host::varlen_attention(a); });
}
void HostDevice::merge_states(const MergeStatesArgs& a) {
  submit([a] { host::merge_states(a); });
}
void HostDevice::linear_attention(const LinearAttnArgs& a) {
  submit([a] { host::linear_attention(a); });
}
void HostDevice::fill_blocks(const FillBlocksArgs& a) {
  submit([a] { host::fill_blocks(a); });
}
void HostDevice::quant_fp8(const QuantFp8Args& a) {
  submit([a] { host::quant_fp8(a); });
}
void HostDevice::embed(const EmbedArgs& a) {
  submit([a] { host::embed(a); });
}
void HostDevice::rms_norm(const RmsNormArgs& a) {
  submit([a] { host::rms_norm(a); });
}
void HostDevice::linear(const LinearArgs& a) {
  submit([a] { host::linear(a); });
}
void HostDevice::argmax(const ArgmaxArgs& a) {
  submit([a] { host::argmax(a); });
}

void HostDevice::memset_async(void* dst, size_t bytes, FillPattern pattern) {
  submit([dst, bytes, pattern] { host::fill_pattern(dst, bytes, pattern, DType::f32, 0, 0); });
}

void HostDevice::begin_capture() {
  if (capturing_) throw DeviceError("begin_capture: already capturing");
  capturing_ = true;
  recording_.clear();
}

GraphId HostDevice::end_capture() {
  if (!capturing_) throw DeviceError("end_capture: not capturing");
  capturing_ = false;
  graphs_.push_back(std::move(recording_));
  recording_.clear();
  return static_cast<GraphId>(graphs_.size() - 1);
}

void HostDevice::replay(GraphId g) {
  if (capturing_) throw DeviceError("replay: called while capturing");
  if (g < 0 || static_cast<size_t>(g) >= graphs_.size())
    throw DeviceError("replay: unknown graph " + std::to_string(g));
  for (const Op& op : graphs_[g]) op();
}

}  // namespace kv
