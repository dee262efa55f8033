// host_device_test.cpp — HostDevice: GPU-like memory (reuse keeps old bytes, graph pools are
// private), op dispatch, and graph capture/replay by address.
#include "device/host_device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace kv {
namespace {

std::vector<unsigned char> bytes_of(Device& d, const void* p, size_t n) {
  std::vector<unsigned char> b(n);
  d.download(b.data(), p, n);
  return b;
}

TEST(HostDevice, NameAndFreshMemoryIsZero) {
  HostDevice d;
  EXPECT_EQ(d.name(), "host");
  void* p = d.alloc(1000);
  const auto b = bytes_of(d, p, 1000);
  for (unsigned char c : b) ASSERT_EQ(c, 0);
  d.release(p);
}

TEST(HostDevice, ReleasedBufferIsReusedWithItsOldBytes) {
  HostDevice d;
  void* a = d.alloc(1000);
  std::vector<unsigned char> pattern(1000);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 1);
  d.upload(a, pattern.data(), pattern.size());
  d.release(a);
  void* b = d.alloc(1024);  // same 256-byte size class as 1000
  EXPECT_EQ(b, a);
  EXPECT_EQ(bytes_of(d, b, 1000), pattern);
  void* c = d.alloc(1000);  // a is taken: fresh, zeroed memory
  EXPECT_NE(c, a);
  EXPECT_EQ(bytes_of(d, c, 1000), std::vector<unsigned char>(1000, 0));
  void* e = d.alloc(1025);  // another size class never receives a's bytes
  EXPECT_NE(e, a);
  d.release(b);
  d.release(c);
  d.release(e);
  EXPECT_EQ(d.live_buffers(), 0u);
}

TEST(HostDevice, BadCallsThrowDeviceError) {
  HostDevice d;
  int x = 0;
  EXPECT_THROW(d.release(&x), DeviceError);
  void* p = d.alloc(16);
  d.release(p);
  EXPECT_THROW(d.release(p), DeviceError);  // double release
  EXPECT_THROW(d.end_capture(), DeviceError);
  EXPECT_THROW(d.replay(0), DeviceError);
  d.begin_capture();
  EXPECT_THROW(d.begin_capture(), DeviceError);
  const GraphId g = d.end_capture();
  EXPECT_EQ(g, 0);
  EXPECT_THROW(d.replay(1), DeviceError);
  d.release(nullptr);  // a no-op, as cudaFree(nullptr)
}

TEST(HostDevice, FillWritesFloatWordsOrSeededBytes) {
  HostDevice d;
  void* p = d.alloc(64);
  d.fill(p, 64, FillPattern::nan, 0);
  std::vector<uint32_t> w(16);
  d.download(w.data(), p, 64);
  for (uint32_t x : w) ASSERT_EQ(x, 0x7fc00000u);
  d.fill(p, 64, FillPattern::inf, 0);
  d.download(w.data(), p, 64);
  for (uint32_t x : w) ASSERT_EQ(x, 0x7f800000u);
  d.fill(p, 64, FillPattern::random_bits, 5);
  const auto r5 = bytes_of(d, p, 64);
  d.fill(p, 64, FillPattern::random_bits, 6);
  const auto r6 = bytes_of(d, p, 64);
  d.fill(p, 64, FillPattern::random_bits, 5);
  EXPECT_EQ(bytes_of(d, p, 64), r5);
  EXPECT_NE(r5, r6);
  d.fill(p, 64, FillPattern::zero, 0);
  EXPECT_EQ(bytes_of(d, p, 64), std::vector<unsigned char>(64, 0));
  d.release(p);
}

// A graph of rms_norm + memset: capture runs nothing; replay reads the input buffer as it is at
// replay time, through the captured addresses.
TEST(HostDevice, CaptureRecordsAndReplayReadsCurrentContents) {
  HostDevice d;
  const int32_t cols = 4;
  float* x = static_cast<float*>(d.alloc(cols * 4));
  float* y = static_cast<float*>(d.alloc(cols * 4));
  float* z = static_cast<float*>(d.alloc(cols * 4));
  const float x1[cols] = {3, 3, 3, 3}, x2[cols] = {-2, -2, -2, -2}, ones[cols] = {1, 1, 1, 1};
  d.upload(x, x1, sizeof x1);
  d.upload(z, ones, sizeof ones);

  d.begin_capture();
  EXPECT_TRUE(d.capturing());
  RmsNormArgs a;
  a.x = x;
  a.out = y;
  a.num_rows = 1;
  a.cols = cols;
  a.eps = 0.0f;
  d.rms_norm(a);
  d.memset_async(z, cols * 4, FillPattern::nan);
  const GraphId g = d.end_capture();
  float got[cols];
  d.download(got, y, sizeof got);
  for (float v : got) ASSERT_EQ(v, 0.0f);  // not run while capturing
  d.download(got, z, sizeof got);
  for (float v : got) ASSERT_EQ(v, 1.0f);

  d.replay(g);
  d.download(got, y, sizeof got);
  for (float v : got) ASSERT_EQ(v, 1.0f);  // 3 / rms(3) = 1
  d.download(got, z, sizeof got);
  for (float v : got) ASSERT_TRUE(std::isnan(v));

  d.upload(x, x2, sizeof x2);  // new contents, same address
  d.replay(g);
  d.download(got, y, sizeof got);
  for (float v : got) ASSERT_EQ(v, -1.0f);

  d.rms_norm(a);  // outside a capture: runs at once
  d.download(got, y, sizeof got);
  for (float v : got) ASSERT_EQ(v, -1.0f);
  d.release(x);
  d.release(y);
  d.release(z);
}

TEST(HostDevice, GraphPoolBuffersAreNeverHandedOutside) {
  HostDevice d;
  void* general = d.alloc(512);
  d.release(general);  // cached in the general pool

  d.begin_capture();
  void* in_graph = d.alloc(512);
  EXPECT_NE(in_graph, general);  // a capture draws from its own pool
  void* tmp = d.alloc(300);
  d.release(tmp);
  void* tmp2 = d.alloc(400);  // the same graph may reuse its own released buffer
  EXPECT_EQ(tmp2, tmp);
  d.release(tmp2);
  d.release(in_graph);
  d.end_capture();

  void* after1 = d.alloc(512);
  void* after2 = d.alloc(512);
  void* after3 = d.alloc(400);
  EXPECT_EQ(after1, general);
  EXPECT_NE(after2, in_graph);
  EXPECT_NE(after3, tmp);

  d.begin_capture();  // a second graph does not get the first graph's buffers either
  void* other = d.alloc(512);
  EXPECT_NE(other, in_graph);
  d.end_capture();
}

TEST(HostDevice, OpsDispatchToTheHostOps) {
  HostDevice d;
  const int32_t vocab = 4;
  const float logits[2 * vocab] = {0, 2, 2, 1, NAN, 0, 0, 0};
  float* l = static_cast<float*>(d.alloc(sizeof logits));
  int32_t* t = static_cast<int32_t*>(d.alloc(8));
  d.upload(l, logits, sizeof logits);
  d.argmax({l, t, 2, vocab});
  int32_t got[2];
  d.download(got, t, 8);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], -1);

  // fill_blocks through the device, on a bf16 interleaved cache of 3 blocks.
  const int32_t nb = 3, bs = 2, kvh = 1, hd = 4;
  void* base = d.alloc(layer_cache_bytes(nb, bs, kvh, hd, DType::bf16));
  const PagedKv c = make_paged_kv(base, KvLayout::interleaved, DType::bf16, nb, bs, kvh, hd);
  const int32_t ids[1] = {1};
  int32_t* dev_ids = static_cast<int32_t*>(d.alloc(4));
  d.upload(dev_ids, ids, 4);
  d.fill_blocks({c, dev_ids, 1, FillPattern::nan, 0});
  std::vector<uint16_t> words(2 * nb * bs * kvh * hd);
  d.download(words.data(), base, words.size() * 2);
  for (size_t i = 0; i < words.size(); ++i)  // block 1 is words [2 * page, 4 * page)
    ASSERT_EQ(words[i], (i >= 16 && i < 32) ? 0x7fc0 : 0) << i;
}

}  // namespace
}  // namespace kv
