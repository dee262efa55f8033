// host_device.cpp — HostDevice: memory (CachingAllocator), the op dispatch and the graph emulation.
#include "device/host_device.h"

#include <cstring>
#include <string>
#include <utility>

#include "kernels/host/host_ops.h"

namespace kv {

void* HostDevice::alloc(size_t bytes) { return memory_.alloc(bytes); }

void HostDevice::release(void* p) { memory_.release(p); }

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

void HostDevice::run_external(const char*, const std::function<void(void* stream)>& fn) {
  submit([fn] { fn(nullptr); });
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
void HostDevice::convert_rows(const ConvertRowsArgs& a) {
  submit([a] { host::convert_rows(a); });
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
  memory_.begin_graph_pool();
}

GraphId HostDevice::end_capture() {
  if (!capturing_) throw DeviceError("end_capture: not capturing");
  capturing_ = false;
  memory_.end_graph_pool();
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
