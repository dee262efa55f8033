// allocator_contract.h — what every device's memory must do, as the GPU's does: fresh memory reads
// as zero, a released buffer comes back to the next alloc of its 256-byte size class with its old
// bytes, another size class or a second alloc never receives them. The host device's test and the
// CUDA device's (tests/gpu) run the same checks.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "device/device.h"

namespace kv::test {

inline std::vector<unsigned char> bytes_of(Device& d, const void* p, size_t n) {
  std::vector<unsigned char> b(n);
  d.download(b.data(), p, n);
  return b;
}

// Leaves no buffer live: `d.live_buffers()` reads 0 afterwards (checked here).
template <class SomeDevice>
void expect_gpu_like_reuse(SomeDevice& d) {
  const std::vector<unsigned char> zeros(1000, 0);
  void* a = d.alloc(1000);
  EXPECT_EQ(bytes_of(d, a, 1000), zeros) << "fresh memory must read as zero";
  std::vector<unsigned char> pattern(1000);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 1);
  d.upload(a, pattern.data(), pattern.size());
  d.release(a);
  void* b = d.alloc(1024);  // same 256-byte size class as 1000: the released buffer, bytes and all
  EXPECT_EQ(b, a);
  EXPECT_EQ(bytes_of(d, b, 1000), pattern)
      << "a released buffer's bytes must survive into the next alloc";
  void* c = d.alloc(1000);  // a is taken: fresh, zeroed memory
  EXPECT_NE(c, a);
  EXPECT_EQ(bytes_of(d, c, 1000), zeros);
  void* e = d.alloc(1025);  // another size class never receives a's bytes
  EXPECT_NE(e, a);
  d.release(b);
  d.release(c);
  d.release(e);
  EXPECT_EQ(d.live_buffers(), 0u);
}

}  // namespace kv::test
