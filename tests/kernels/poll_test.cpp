// poll_test.cpp — kernels/host/poll.h: the poll is called once per kPollWork units of work, only
// within a scope and only on its thread; a throwing poll ends a long op (varlen attention, a
// pattern fill) mid-way; a poll that does not throw changes no output bit, nor does the fill's
// chunking.
#include "kernels/host/poll.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/host/host_ops.h"

namespace kv::test {
namespace {

using host::kPollWork;
using host::poll_point;
using host::PollScope;

struct Stop : std::runtime_error {
  Stop() : std::runtime_error("stop") {}
};

TEST(Poll, IsCalledOncePerPollWorkWithinItsScopeOnly) {
  int calls = 0;
  poll_point(4 * kPollWork);  // no scope: nothing to call
  {
    const PollScope scope([&] { ++calls; });
    for (int i = 0; i < 8; ++i) poll_point(kPollWork / 2);
    EXPECT_EQ(calls, 4);
    std::thread([] { poll_point(4 * kPollWork); }).join();  // another thread has no scope
    EXPECT_EQ(calls, 4);
  }
  poll_point(4 * kPollWork);
  EXPECT_EQ(calls, 4) << "the scope has ended";
}

TEST(Poll, ScopesNestAndAnEmptyOneKeepsTheOuter) {
  int outer = 0, inner = 0;
  const PollScope a([&] { ++outer; });
  {
    const PollScope b([&] { ++inner; });
    poll_point(kPollWork);
    const PollScope none{host::Poll()};
    poll_point(kPollWork);
  }
  poll_point(kPollWork);
  EXPECT_EQ(inner, 2);
  EXPECT_EQ(outer, 1);
}

// One sequence of `n` query rows over its own `n` keys, causal, 4 heads of 32.
struct Varlen {
  explicit Varlen(int32_t n)
      : q(static_cast<size_t>(n) * 128), k(q.size()), out(q.size()), lse(n * 4),
        starts{0, n} {
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
      k[i] = static_cast<float>((i * 53) % 89) / 89.0f - 0.5f;
    }
  }
  void run() {
    host::varlen_attention({.q = q.data(), .q_row_stride = 128, .k = k.data(), .v = k.data(),
                            .kv_row_stride = 128, .q_starts = starts.data(),
                            .k_starts = starts.data(), .out = out.data(), .out_row_stride = 128,
                            .lse = lse.data(), .num_seqs = 1, .num_rows = starts[1],
                            .num_keys = starts[1], .num_q_heads = 4, .num_kv_heads = 4,
                            .head_dim = 32, .scale = 0.2f, .causal = true});
  }
  std::vector<float> q, k, out, lse;
  std::vector<int32_t> starts;
};

TEST(Poll, AThrowingPollEndsAnAttentionOpMidWay) {
  Varlen v(2048);  // 2048^2 / 2 x 4 heads x 64 = 5.4e8 units: many polls
  int calls = 0;
  const PollScope scope([&] {
    if (++calls == 3) throw Stop();
  });
  EXPECT_THROW(v.run(), Stop);
  EXPECT_EQ(calls, 3);
}

TEST(Poll, APollThatDoesNotThrowChangesNoOutputBit) {
  Varlen plain(600), polled(600);
  plain.run();
  int calls = 0;
  {
    const PollScope scope([&] { ++calls; });
    polled.run();
  }
  EXPECT_GT(calls, 0);
  EXPECT_EQ(std::memcmp(plain.out.data(), polled.out.data(), plain.out.size() * 4), 0);
  EXPECT_EQ(std::memcmp(plain.lse.data(), polled.lse.data(), plain.lse.size() * 4), 0);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The fill goes in chunks of a megabyte with a poll between them: the bytes are one pass's.
TEST(Poll, AChunkedFillWritesOnePassBytesAndCanBeEnded) {
  const size_t bytes = (size_t{12} << 20) + 13;  // several chunks and a ragged tail
  std::vector<unsigned char> a(bytes), b(bytes);
  host::fill_pattern(a.data(), bytes, FillPattern::random_bits, DType::f32, 7, 3);
  uint64_t state = 7;
  state = splitmix64(state) ^ 3;
  for (size_t i = 0; i < bytes; i += 8) {  // one stream of 8-byte words, the tail cut short
    const uint64_t r = splitmix64(state);
    std::memcpy(b.data() + i, &r, std::min<size_t>(8, bytes - i));
  }
  EXPECT_EQ(std::memcmp(a.data(), b.data(), bytes), 0);
  // bf16 NaN codes across chunk boundaries: every element whole.
  host::fill_pattern(a.data(), bytes - 1, FillPattern::nan, DType::bf16, 0, 0);
  for (size_t i = 0; i + 1 < bytes - 1; i += 2) ASSERT_EQ(a[i] | a[i + 1] << 8, 0x7fc0) << i;
  int calls = 0;
  const PollScope scope([&] {
    if (++calls == 2) throw Stop();
  });
  std::fill(b.begin(), b.end(), 0);
  EXPECT_THROW(host::fill_pattern(b.data(), bytes, FillPattern::nan, DType::f32, 0, 0), Stop);
  EXPECT_EQ(b.back(), 0) << "ended before its last chunk";
}

}  // namespace
}  // namespace kv::test
