// caching_allocator_test.cpp — CachingAllocator over a fake RawMemory (no GPU needed): size-class
// reuse keeps bytes, graph pools are private for good, bad releases, zero-size allocs, stats, and
// out of memory (the cache is given back once, never during a capture).
#include "device/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "device/device.h"

namespace kv {
namespace {

// calloc with a budget: raw_alloc returns nullptr once `capacity` bytes are out, as a GPU does.
class FakeMemory : public RawMemory {
 public:
  explicit FakeMemory(size_t capacity = std::numeric_limits<size_t>::max()) : capacity_(capacity) {}
  ~FakeMemory() override {
    for (const auto& [p, n] : out_) std::free(p);
  }

  void* raw_alloc(size_t bytes) override {
    ++allocs;
    if (bytes > capacity_ - in_use()) return nullptr;
    void* p = std::calloc(bytes, 1);
    out_.push_back({p, bytes});
    return p;
  }
  void raw_free(void* p) override {
    ++frees;
    for (auto it = out_.begin(); it != out_.end(); ++it)
      if (it->first == p) {
        std::free(p);
        out_.erase(it);
        return;
      }
    ADD_FAILURE() << "raw_free of a pointer raw_alloc did not return";
  }
  void quiesce() override { ++quiesces; }
  std::string out_of_memory(size_t bytes, size_t cached) const override {
    return "fake: out of memory for " + std::to_string(bytes) + " bytes, " +
           std::to_string(cached) + " cached";
  }

  size_t in_use() const {
    size_t n = 0;
    for (const auto& [p, b] : out_) n += b;
    return n;
  }
  size_t outstanding() const { return out_.size(); }

  int allocs = 0, frees = 0, quiesces = 0;

 private:
  size_t capacity_;
  std::vector<std::pair<void*, size_t>> out_;
};

std::vector<unsigned char> pattern(size_t n, unsigned char salt) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 7 + salt);
  return b;
}

std::vector<unsigned char> bytes_at(const void* p, size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  return {c, c + n};
}

TEST(CachingAllocator, SizeClassesRoundUpTo256Bytes) {
  EXPECT_EQ(CachingAllocator::size_class(0), 256u);
  EXPECT_EQ(CachingAllocator::size_class(1), 256u);
  EXPECT_EQ(CachingAllocator::size_class(256), 256u);
  EXPECT_EQ(CachingAllocator::size_class(257), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1000), 1024u);
}

TEST(CachingAllocator, AReleasedBufferComesBackWithItsBytesInItsClassOnly) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  void* a = m.alloc(1000);
  EXPECT_EQ(bytes_at(a, 1000), std::vector<unsigned char>(1000, 0)) << "fresh memory is zero";
  const auto pat = pattern(1000, 3);
  std::memcpy(a, pat.data(), pat.size());
  m.release(a);
  void* b = m.alloc(769);  // 769..1024 bytes: the same class as 1000
  EXPECT_EQ(b, a);
  EXPECT_EQ(bytes_at(b, 1000), pat) << "a released buffer's bytes survive into the next alloc";
  EXPECT_EQ(raw.allocs, 1) << "a reuse never asks the backend";
  void* c = m.alloc(1000);  // a is taken: fresh memory
  EXPECT_NE(c, a);
  EXPECT_EQ(raw.allocs, 2);
  m.release(b);
  void* e = m.alloc(1025);  // another class never receives a's bytes
  EXPECT_NE(e, a);
  void* f = m.alloc(768);  // nor a smaller one
  EXPECT_NE(f, a);
  for (void* p : {c, e, f}) m.release(p);
  EXPECT_EQ(m.live_buffers(), 0u);
}

TEST(CachingAllocator, MostRecentlyReleasedComesBackFirst) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  void* a = m.alloc(300);
  void* b = m.alloc(300);
  m.release(a);
  m.release(b);
  EXPECT_EQ(m.alloc(300), b);
  EXPECT_EQ(m.alloc(300), a);
}

TEST(CachingAllocator, ABufferOfAGraphPoolIsNeverHandedOutAfterItsCapture) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  void* general = m.alloc(512);
  m.release(general);

  m.begin_graph_pool();
  EXPECT_TRUE(m.in_graph_pool());
  void* in_graph = m.alloc(512);
  EXPECT_NE(in_graph, general) << "a capture draws from its own pool, not the general cache";
  void* tmp = m.alloc(700);
  m.release(tmp);
  EXPECT_EQ(m.alloc(600), tmp) << "the graph reuses its own released buffers";
  m.end_graph_pool();
  EXPECT_FALSE(m.in_graph_pool());

  m.release(in_graph);  // released after the capture: back to the graph's pool only
  m.release(tmp);
  std::set<void*> later;
  for (int i = 0; i < 4; ++i) later.insert(m.alloc(512));
  for (int i = 0; i < 4; ++i) later.insert(m.alloc(700));
  EXPECT_TRUE(later.count(general)) << "the general pool's buffer is reused";
  EXPECT_FALSE(later.count(in_graph));
  EXPECT_FALSE(later.count(tmp));

  m.begin_graph_pool();  // a second graph does not get the first graph's buffers either
  void* other = m.alloc(512);
  void* other2 = m.alloc(700);
  EXPECT_NE(other, in_graph);
  EXPECT_NE(other2, tmp);
  m.end_graph_pool();
  EXPECT_THROW(m.end_graph_pool(), DeviceError) << "no graph pool is open";
  m.begin_graph_pool();
  EXPECT_THROW(m.begin_graph_pool(), DeviceError) << "graph pools do not nest";
  m.end_graph_pool();
}

TEST(CachingAllocator, ReleasingWhatItDidNotHandOutIsADeviceError) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  int x = 0;
  try {
    m.release(&x);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "fake release: not a live allocation of this device");
  }
  void* p = m.alloc(16);
  m.release(p);
  EXPECT_THROW(m.release(p), DeviceError) << "double release";
  m.release(nullptr);  // a no-op, as cudaFree(nullptr)
  EXPECT_EQ(raw.frees, 0) << "a bad release never reaches the backend";
}

TEST(CachingAllocator, AZeroSizeAllocIsARealBufferOfTheSmallestClass) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  void* a = m.alloc(0);
  void* b = m.alloc(0);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(m.stats().live_bytes, 512u);
  m.release(a);
  EXPECT_EQ(m.alloc(256), a) << "0 bytes and 256 bytes share a class";
  m.release(a);
  m.release(b);
}

TEST(CachingAllocator, ASizeThatCannotBeRoundedUpIsADeviceError) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  const size_t huge = std::numeric_limits<size_t>::max() - 10;
  try {
    m.alloc(huge);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("fake alloc: size overflow"), std::string::npos);
  }
  EXPECT_EQ(raw.allocs, 0);
}

TEST(CachingAllocator, StatsCountLiveCachedFreshAndReused) {
  FakeMemory raw;
  CachingAllocator m(raw, "fake");
  EXPECT_EQ(m.stats().reserved_bytes(), 0u);
  void* a = m.alloc(100);   // 256
  void* b = m.alloc(1000);  // 1024
  m.release(a);
  AllocatorStats s = m.stats();
  EXPECT_EQ(s.live_buffers, 1u);
  EXPECT_EQ(s.live_bytes, 1024u);
  EXPECT_EQ(s.cached_buffers, 1u);
  EXPECT_EQ(s.cached_bytes, 256u);
  EXPECT_EQ(m.cached_bytes(), 256u);
  EXPECT_EQ(s.reserved_bytes(), 1280u);
  EXPECT_EQ(s.fresh_allocs, 2u);
  EXPECT_EQ(s.reuses, 0u);
  EXPECT_EQ(s.graph_pools, 0u);

  m.alloc(200);  // a again
  m.begin_graph_pool();
  void* g = m.alloc(200);  // fresh: graph pools start empty
  m.end_graph_pool();
  m.release(g);
  m.release(b);
  s = m.stats();
  EXPECT_EQ(s.live_buffers, 1u);
  EXPECT_EQ(s.live_bytes, 256u);
  EXPECT_EQ(s.cached_buffers, 2u);
  EXPECT_EQ(s.cached_bytes, 1280u) << "a graph pool's buffers count as cached";
  EXPECT_EQ(s.fresh_allocs, 3u);
  EXPECT_EQ(s.reuses, 1u);
  EXPECT_EQ(s.graph_pools, 1u);
  EXPECT_EQ(s.raw_frees, 0u);
  EXPECT_EQ(s.reserved_bytes(), raw.in_use());
}

TEST(CachingAllocator, OutOfMemoryGivesTheGeneralCacheBackOnceThenThrows) {
  FakeMemory raw(2048);
  CachingAllocator m(raw, "fake");
  void* keep = m.alloc(512);
  m.begin_graph_pool();
  void* graph = m.alloc(512);
  m.end_graph_pool();
  m.release(graph);  // cached in the graph's pool: never given back, never reused
  void* cached = m.alloc(512);
  m.release(cached);  // cached in the general pool
  ASSERT_EQ(raw.in_use(), 1536u);

  void* big = m.alloc(1024);  // does not fit beside the cache: the general cache goes back
  EXPECT_EQ(raw.quiesces, 1) << "ops in flight are waited for before cached memory is freed";
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(m.stats().raw_frees, 1u);
  EXPECT_EQ(m.cached_bytes(), 512u) << "the graph pool's buffer stays";
  EXPECT_EQ(raw.in_use(), 2048u);

  try {
    m.alloc(300);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "fake: out of memory for 300 bytes, 512 cached");
  }
  EXPECT_EQ(raw.quiesces, 1) << "nothing in the general cache: no second wait";

  m.release(keep);
  m.begin_graph_pool();  // during a capture the cache is never freed
  EXPECT_THROW(m.alloc(256), DeviceError);
  EXPECT_EQ(raw.frees, 1);
  m.end_graph_pool();
  void* again = m.alloc(256);  // outside the capture it is (another class than keep's)
  EXPECT_EQ(raw.frees, 2);
  EXPECT_EQ(raw.quiesces, 2);
  m.release(again);
  m.release(big);
  EXPECT_EQ(m.live_buffers(), 0u);
}

TEST(CachingAllocator, DestructionGivesEveryBufferBack) {
  FakeMemory raw;
  {
    CachingAllocator m(raw, "fake");
    m.alloc(100);  // live
    m.release(m.alloc(5000));  // cached, general pool
    m.begin_graph_pool();
    m.release(m.alloc(700));  // cached, graph pool
    m.alloc(100);  // live, graph pool
    m.end_graph_pool();
    EXPECT_EQ(raw.outstanding(), 4u);
  }
  EXPECT_EQ(raw.outstanding(), 0u);
  EXPECT_EQ(raw.frees, 4);
}

}  // namespace
}  // namespace kv
