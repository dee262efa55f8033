// host_device_test.cpp — HostDevice: GPU-like memory (reuse keeps old bytes, graph pools are
// private), op dispatch, and graph capture/replay by address (linear_attention and the MLA form
// of paged_decode included).
#include "device/host_device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/host/host_ops.h"
#include "tests/device/allocator_contract.h"

namespace kv {
namespace {

using test::bytes_of;

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
  test::expect_gpu_like_reuse(d);
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
  const PagedKv c = make_paged_kv(base, KvLayout::kv_interleaved, DType::bf16, nb, bs, kvh, hd);
  const int32_t ids[1] = {1};
  int32_t* dev_ids = static_cast<int32_t*>(d.alloc(4));
  d.upload(dev_ids, ids, 4);
  d.fill_blocks({c, dev_ids, 1, FillPattern::nan, 0});
  std::vector<uint16_t> words(2 * nb * bs * kvh * hd);
  d.download(words.data(), base, words.size() * 2);
  for (size_t i = 0; i < words.size(); ++i)  // block 1 is words [2 * page, 4 * page)
    ASSERT_EQ(words[i], (i >= 16 && i < 32) ? 0x7fc0 : 0) << i;
}

// linear_attention is recorded like every op: capture runs nothing, a replay reads the inputs,
// the metadata and the state as they are at replay time. Compared bit for bit with the host op
// run directly on copies of the same inputs.
TEST(HostDevice, LinearAttentionIsRecordedAndReplayedByAddress) {
  HostDevice d;
  const int32_t heads = 2, dim = 3, rows = 4, width = heads * dim, dd = dim * dim;
  const int64_t block_stride = heads * dd + 2;
  auto dev = [&](size_t floats) { return static_cast<float*>(d.alloc(floats * 4)); };
  float* state = dev(3 * block_stride);
  float* q = dev(rows * width);
  float* k = dev(rows * width);
  float* v = dev(rows * width);
  float* gate = dev(rows * heads);
  float* out = dev(rows * width);
  int32_t* meta = static_cast<int32_t*>(d.alloc(5 * 4));  // starts[3], blocks[1], init[1]
  std::vector<float> hq(rows * width), hk(rows * width), hv(rows * width), hg(rows * heads);
  for (int32_t i = 0; i < rows * width; ++i)
    hq[i] = 0.1f * (i % 7) - 0.3f, hk[i] = 0.05f * (i % 5) - 0.1f, hv[i] = 0.2f - 0.03f * i;
  for (int32_t i = 0; i < rows * heads; ++i) hg[i] = 0.5f * i - 1.0f;
  d.upload(q, hq.data(), hq.size() * 4);
  d.upload(k, hk.data(), hk.size() * 4);
  d.upload(v, hv.data(), hv.size() * 4);
  d.upload(gate, hg.data(), hg.size() * 4);
  const int32_t meta1[5] = {0, rows, 1, 0, 0};  // one fresh sequence of 4 rows in block 1
  d.upload(meta, meta1, sizeof meta1);

  LinearAttnArgs a;
  a.state = state, a.state_block_stride = block_stride;
  a.q = q, a.k = k, a.v = v, a.qkv_row_stride = width;
  a.gate = gate, a.gate_row_stride = heads;
  a.out = out, a.out_row_stride = width;
  a.seq_starts = meta, a.state_blocks = meta + 2, a.has_initial_state = meta + 3;
  a.num_seqs = 1, a.num_heads = heads, a.head_dim = dim, a.scale = 0.5f;
  d.begin_capture();
  d.linear_attention(a);
  const GraphId g = d.end_capture();
  std::vector<float> got(rows * width), st(3 * block_stride);
  d.download(got.data(), out, got.size() * 4);
  for (float x : got) ASSERT_EQ(x, 0.0f);  // not run while capturing
  d.download(st.data(), state, st.size() * 4);
  for (float x : st) ASSERT_EQ(x, 0.0f);

  // The expected results: the host op on host copies, the same two calls in the same order.
  std::vector<float> want_state(3 * block_stride, 0.0f), want_out(rows * width, 0.0f);
  std::vector<int32_t> want_meta(meta1, meta1 + 5);
  LinearAttnArgs h = a;
  h.state = want_state.data(), h.q = hq.data(), h.k = hk.data(), h.v = hv.data();
  h.gate = hg.data(), h.out = want_out.data();
  h.seq_starts = want_meta.data(), h.state_blocks = want_meta.data() + 2;
  h.has_initial_state = want_meta.data() + 3;
  host::linear_attention(h);

  auto replay_matches_host = [&] {
    d.replay(g);
    d.download(got.data(), out, got.size() * 4);
    d.download(st.data(), state, st.size() * 4);
    EXPECT_EQ(memcmp(got.data(), want_out.data(), got.size() * 4), 0);
    EXPECT_EQ(memcmp(st.data(), want_state.data(), st.size() * 4), 0);
  };
  replay_matches_host();
  for (int64_t i = 0; i < block_stride; ++i) ASSERT_EQ(st[i], 0.0f);  // block 0: not ours
  bool nonzero = false;
  for (int64_t i = 0; i < heads * dd; ++i) nonzero = nonzero || st[block_stride + i] != 0.0f;
  EXPECT_TRUE(nonzero);

  // Second replay: the metadata buffer now says "continue the state", and q changed.
  const int32_t meta2[5] = {0, rows, 1, 1, 0};
  d.upload(meta, meta2, sizeof meta2);
  for (float& x : hq) x = -x;
  d.upload(q, hq.data(), hq.size() * 4);
  std::copy(meta2, meta2 + 5, want_meta.begin());
  host::linear_attention(h);
  replay_matches_host();
  for (void* p : {static_cast<void*>(state), static_cast<void*>(q), static_cast<void*>(k),
                  static_cast<void*>(v), static_cast<void*>(gate), static_cast<void*>(out),
                  static_cast<void*>(meta)})
    d.release(p);
}

// The MLA form of paged_decode goes through the device with its v_dim: one row of one key, so
// the output of each head is exactly the first v_dim latent features of that key.
TEST(HostDevice, MlaDecodeKeepsItsVDimThroughCapture) {
  HostDevice d;  // it runs on host memory: the small host arrays below serve as device buffers
  const int32_t bs = 2, rank = 2, hd = 3, heads = 2;
  void* base = d.alloc(layer_cache_bytes(2, bs, 1, hd, DType::f32));
  PagedKv c = make_paged_kv(base, KvLayout::kv_separate, DType::f32, 2, bs, 1, hd);
  c.v = c.k;
  const float lat[hd] = {0.75f, -1.5f, 4.0f};
  const int64_t slot[1] = {1 * bs + 0};  // block 1, entry 0
  d.write_kv(WriteKvArgs{c, lat, nullptr, hd, 0, slot, 1});
  const float q[heads * hd] = {1, 2, 3, -1, 0.5f, 2};
  const int32_t table[1] = {1}, lens[1] = {1}, meta[2] = {bs, 1};
  float out[heads * rank + 1], po[heads * rank], pl[heads];
  for (float& x : out) x = -7.0f;
  PagedDecodeArgs a;
  a.cache = c, a.q = q, a.q_row_stride = heads * hd, a.out = out, a.out_row_stride = heads * rank;
  a.block_table = table, a.block_table_stride = 1, a.seq_lens = lens, a.split_meta = meta;
  a.partial_out = po, a.partial_lse = pl, a.max_splits = 1, a.num_rows = 1;
  a.num_q_heads = heads, a.v_dim = rank, a.scale = 0.3f;
  d.begin_capture();
  d.paged_decode(a);
  const GraphId g = d.end_capture();
  EXPECT_EQ(out[0], -7.0f);
  d.replay(g);
  for (int32_t h = 0; h < heads; ++h)
    for (int32_t f = 0; f < rank; ++f) EXPECT_EQ(out[h * rank + f], lat[f]) << h << " " << f;
  EXPECT_EQ(out[heads * rank], -7.0f);  // nothing past num_q_heads * v_dim
  d.release(base);
}

}  // namespace
}  // namespace kv
