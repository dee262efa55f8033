// conform_staging.cpp — device copies of a conform case's host buffers (conform_staging.h).
#include "conform/conform_staging.h"

#include <algorithm>
#include <stdexcept>

namespace kv::conform {

Staging::~Staging() {
  for (const Range& r : ranges_) device_.release(r.dev);
}

void Staging::add(void* p, size_t bytes, bool output) {
  if (p == nullptr) return;
  void* dev = device_.alloc(std::max<size_t>(bytes, 1));  // an empty tensor still has an address
  ranges_.push_back({p, bytes, dev, output});
  device_.upload(dev, p, bytes);
}

const void* Staging::to_device(const void* p) const {
  if (p == nullptr) return nullptr;
  const auto* q = static_cast<const uint8_t*>(p);
  for (const Range& r : ranges_) {
    const auto* h = static_cast<const uint8_t*>(r.host);
    if (q >= h && (q < h + r.bytes || q == h)) return static_cast<uint8_t*>(r.dev) + (q - h);
  }
  throw std::logic_error("conform: a buffer the case did not stage reached the plugin");
}

void Staging::download() {
  for (const Range& r : ranges_)
    if (r.output) device_.download(r.host, r.dev, r.bytes);
}

}  // namespace kv::conform
