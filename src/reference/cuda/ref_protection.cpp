// ref_protection.cpp — the GPU reference's proof that its memory is unchanged: hashes of
// the weights and of every part of a slot's history over what it wrote, checked before they are
// read (verify) — the code under test shares the device and may write out of bounds.
#include "reference/cuda/cuda_reference_impl.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace kv::refgpu_impl {

std::vector<unsigned long long> CudaReference::hash(
    const std::vector<refgpu::HashRange>& ranges) {
  const size_t n = ranges.size();
  if (n == 0) return {};
  ranges_.reserve(n * sizeof(refgpu::HashRange), "hash ranges", held_);
  sums_.reserve(n * 8, "hash sums", held_);
  ranges_host_.reserve(n * sizeof(refgpu::HashRange));
  sums_host_.reserve(n * 8);
  note_held();
  std::memcpy(ranges_host_.as<void>(), ranges.data(), n * sizeof(refgpu::HashRange));
  upload(ranges_.as<void>(), ranges_host_.as<void>(), n * sizeof(refgpu::HashRange));
  refgpu::hash_ranges(stream_, ranges_.as<refgpu::HashRange>(), static_cast<int32_t>(n),
                      sums_.as<unsigned long long>());
  KV_CUDA_CHECK("reference hash", cudaMemcpyAsync(sums_host_.as<void>(), sums_.as<void>(), n * 8,
                                                  cudaMemcpyDeviceToHost, stream_));
  sync();
  const auto* s = sums_host_.as<unsigned long long>();
  return std::vector<unsigned long long>(s, s + n);
}
void CudaReference::verify(Check which, const std::vector<const Slot*>& slots) {
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<const Slot*, size_t>> what;  // per range after the first: slot, part
  ranges.push_back({weights_.as<uint32_t>(), 0, static_cast<int64_t>(weights_.bytes() / 4)});
  std::vector<const Slot*> live;
  for (const auto& sl : slots_)
    if (sl->request >= 0) live.push_back(sl.get());
  for (const Slot* sl : which == Check::every_step ? live : slots) {
    if (sl->kept == 0) continue;
    for (size_t p = 0; p < parts_.size(); ++p) {
      const Part& part = parts_[p];
      if (which != Check::all && part.every_step != (which == Check::every_step)) continue;
      const int64_t bytes = part.whole_bytes ? part.whole_bytes : sl->kept * part.row_bytes;
      ranges.push_back({reinterpret_cast<const uint32_t*>(sl->mem.as<char>() + part.off), 0,
                        bytes / 4});
      what.push_back({sl, p});
    }
  }
  const std::vector<unsigned long long> sums = hash(ranges);
  auto changed = [](const std::string& what_changed) {
    throw DeviceError(
        "the GPU reference's memory changed while the code under test ran: " + what_changed +
        " differs from what the reference wrote (its checksum no longer matches). Something on "
        "the device wrote out of bounds; with a backend, run it under compute-sanitizer, or "
        "with --reference-device host to judge it without the GPU reference");
  };
  if (sums[0] != weights_hash_) changed("the reference's copy of the model weights");
  for (size_t i = 1; i < sums.size(); ++i) {
    const auto [sl, p] = what[i - 1];
    if (sums[i] == sl->hashes[p]) continue;
    const Part& part = parts_[p];
    changed(fmt::format("request {}'s {}{} ({} positions{})", sl->request, part.what,
                        part.layer < 0 ? "" : fmt::format(" of layer {}", part.layer), sl->kept,
                        which == Check::all ? ", kept from an earlier epoch" : ""));
  }
}

}  // namespace kv::refgpu_impl
