// linear_attention_test.cpp — gated linear attention against a float64 recurrence: sequences of
// 0, 1, 2, 5 and 17 rows, fresh and continued states, padded (-1) sequences, state blocks with
// padding between them, 1 and 3 heads of 1, 4 and 16 features; descriptor validation.
#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kv::test {
namespace {

struct LinSeq {
  int32_t len, block, has_initial_state;
};

// Float errors relative to the magnitude of the terms (the same recurrence over |values|): each
// of the <= 17 state updates and the <= 16-term q·S sum rounds a few times, so |error| stays below
// ~(3 * 17 + 16 + 4) * 2^-24 ≈ 4e-6 of that magnitude; 1e-5 leaves margin, and an output against
// the wrong state, gate or head is off by O(1) of it.
constexpr double kLinTol = 1e-5;

struct LinCase : LinearAttnBuffers {
  int32_t heads = 1, dim = 4, pad = 0, num_blocks = 8;
  std::vector<LinSeq> seqs;
  int64_t block_stride = 0;
  std::vector<float> state;
  float scale = 0.0f;

  LinCase(Rng& rng, int32_t h, int32_t d, int32_t p, std::vector<LinSeq> s)
      : heads(h), dim(d), pad(p), seqs(std::move(s)) {
    const int64_t width = int64_t(heads) * dim;
    block_stride = width * dim + pad;
    qkv_stride = width + 3, gate_stride = heads + 1, out_stride = width + 2;
    starts = {1};  // row 0 belongs to no sequence: it must stay untouched
    for (const LinSeq& x : seqs) {
      starts.push_back(starts.back() + x.len);
      blocks.push_back(x.block);
      init.push_back(x.has_initial_state);
    }
    const int32_t rows = starts.back() + 1;  // and so does the last row
    state.resize(size_t(num_blocks) * block_stride);
    poison(state);
    for (const LinSeq& x : seqs)  // a continued sequence finds a real state in its block
      if (x.block >= 0 && x.has_initial_state) {
        const std::vector<float> s0 = random_floats(rng, size_t(width) * dim, -2.0f, 2.0f);
        std::copy(s0.begin(), s0.end(), state.begin() + x.block * block_stride);
      }
    q = random_floats(rng, size_t(rows) * qkv_stride);
    k = random_floats(rng, size_t(rows) * qkv_stride);
    v = random_floats(rng, size_t(rows) * qkv_stride);
    gate = random_floats(rng, size_t(rows) * gate_stride, -4.0f, 4.0f);
    out.resize(size_t(rows) * out_stride);
    poison(out);
    scale = 1.0f / std::sqrt(float(dim));
  }

  LinearAttnArgs args() {
    return LinearAttnBuffers::args(state.data(), block_stride, heads, dim, scale);
  }
};

// Runs the op and compares every output, state and untouched byte with the float64 recurrence.
void run_and_check(LinCase& c) {
  const std::vector<float> state0 = c.state;
  host::linear_attention(c.args());
  const int32_t d = c.dim;
  const int64_t width = int64_t(c.heads) * d, dd = int64_t(d) * d;
  std::vector<bool> written_block(c.num_blocks, false);
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const LinSeq& x = c.seqs[s];
    SCOPED_TRACE(testing::Message() << "sequence " << s << " len " << x.len << " block " << x.block
                                    << " init " << x.has_initial_state);
    if (x.block < 0) {  // padded: its rows keep their poison
      for (int64_t r = c.starts[s]; r < c.starts[s + 1]; ++r)
        for (int64_t i = 0; i < c.out_stride; ++i)
          ASSERT_TRUE(is_poison(c.out[r * c.out_stride + i]));
      continue;
    }
    written_block[x.block] = true;
    const float* init = &state0[x.block * c.block_stride];
    const float* final_state = &c.state[x.block * c.block_stride];
    for (int32_t h = 0; h < c.heads; ++h) {
      std::vector<double> st(dd, 0.0), mag(dd, 0.0);  // mag: the recurrence over |values|
      if (x.has_initial_state)
        for (int64_t e = 0; e < dd; ++e)
          st[e] = init[h * dd + e], mag[e] = std::fabs(init[h * dd + e]);
      for (int64_t r = c.starts[s]; r < c.starts[s + 1]; ++r) {
        const float* q = &c.q[r * c.qkv_stride + h * d];
        const float* k = &c.k[r * c.qkv_stride + h * d];
        const float* v = &c.v[r * c.qkv_stride + h * d];
        const double g = 1.0 / (1.0 + std::exp(-double(c.gate[r * c.gate_stride + h])));
        for (int32_t i = 0; i < d; ++i)
          for (int32_t j = 0; j < d; ++j) {
            st[i * d + j] = g * st[i * d + j] + double(k[i]) * v[j];
            mag[i * d + j] = g * mag[i * d + j] + std::fabs(double(k[i]) * v[j]);
          }
        for (int32_t j = 0; j < d; ++j) {
          double ref = 0.0, m = 0.0;
          for (int32_t i = 0; i < d; ++i) {
            ref += double(q[i]) * st[i * d + j];
            m += std::fabs(double(q[i])) * mag[i * d + j];
          }
          const double err = std::fabs(c.out[r * c.out_stride + h * d + j] - c.scale * ref);
          ASSERT_FALSE(!(err <= kLinTol * c.scale * m))
              << "row " << r << " head " << h << " j " << j;
        }
      }
      for (int64_t e = 0; e < dd; ++e) {
        const double err = std::fabs(final_state[h * dd + e] - st[e]);
        ASSERT_FALSE(!(err <= kLinTol * mag[e])) << "state of head " << h << " element " << e;
      }
    }
    if (x.len == 0 && x.has_initial_state) {  // nothing to add: the state is stored back as is
      ASSERT_EQ(memcmp(final_state, init, width * d * 4), 0);
    }
    for (int64_t i = width * d; i < c.block_stride; ++i)  // the padding after the state
      ASSERT_TRUE(is_poison(final_state[i])) << "padding " << i;
  }
  for (int32_t b = 0; b < c.num_blocks; ++b)  // blocks of padded sequences and unused blocks
    if (!written_block[b]) {
      ASSERT_EQ(
          memcmp(&c.state[b * c.block_stride], &state0[b * c.block_stride], c.block_stride * 4), 0)
          << "block " << b;
    }
  for (int32_t r : {0, c.starts.back()})  // rows outside every sequence
    for (int64_t i = 0; i < c.out_stride; ++i) ASSERT_TRUE(is_poison(c.out[r * c.out_stride + i]));
  for (int32_t r = 0; r < c.starts.back(); ++r)  // the gap between a row's heads and its stride
    for (int64_t i = width; i < c.out_stride; ++i)
      ASSERT_TRUE(is_poison(c.out[r * c.out_stride + i]));
}

const std::vector<LinSeq> kSeqs = {{5, 2, 0}, {1, 4, 1},  {0, 0, 0}, {17, -1, 1},
                                   {2, 5, 1}, {17, 1, 0}, {0, 3, 1}, {5, -1, 0}};

TEST(LinearAttention, MatchesFloat64RecurrenceAcrossShapes) {
  Rng rng(61);
  for (int32_t heads : {1, 3})
    for (int32_t dim : {1, 4, 16})
      for (int32_t pad : {0, 7}) {
        SCOPED_TRACE(testing::Message() << "heads " << heads << " dim " << dim << " pad " << pad);
        LinCase c(rng, heads, dim, pad, kSeqs);
        run_and_check(c);
      }
}

// A fresh sequence of 0 rows still stores its (zero) state; a fresh sequence never reads its
// block, which holds NaN here.
TEST(LinearAttention, FreshSequencesIgnoreWhatTheBlockHolds) {
  Rng rng(62);
  LinCase c(rng, 3, 4, 0, {{0, 1, 0}, {3, 2, 0}});
  run_and_check(c);
  for (int64_t e = 0; e < 3 * 16; ++e) ASSERT_EQ(f32_bits(c.state[1 * c.block_stride + e]), 0u);
  EXPECT_TRUE(all_finite(&c.out[1 * c.out_stride], 12));
}

// Continuing a sequence with the stored state equals running it in one go: the state written
// back after the last row is the whole recurrence's state.
TEST(LinearAttention, SplittingASequenceAcrossCallsGivesTheSameResult) {
  Rng rng(63);
  LinCase whole(rng, 3, 16, 5, {{9, 2, 0}});
  LinCase split = whole;  // the same inputs; the split runs rows 1..4 then 5..9
  host::linear_attention(whole.args());
  split.seqs = {{4, 2, 0}};
  split.starts = {1, 5};
  host::linear_attention(split.args());
  split.seqs = {{5, 2, 1}};
  split.starts = {5, 10};
  split.init = {1};
  host::linear_attention(split.args());
  // Only the association of float roundings could differ, and it does not: the same updates run
  // in the same order on the same values, so the results are bitwise equal.
  EXPECT_EQ(memcmp(whole.out.data(), split.out.data(), whole.out.size() * 4), 0);
  EXPECT_EQ(memcmp(whole.state.data(), split.state.data(), whole.state.size() * 4), 0);
}

TEST(LinearAttention, BrokenDescriptorsAreRejectedBeforeAnyWrite) {
  Rng rng(64);
  LinCase c(rng, 3, 4, 0, {{3, 2, 1}, {2, 4, 0}});
  const std::vector<float> state0 = c.state, out0 = c.out;
  auto rejects = [&](auto mutate) {
    LinearAttnArgs a = c.args();
    std::vector<int32_t> starts = c.starts, blocks = c.blocks;
    a.seq_starts = starts.data();
    a.state_blocks = blocks.data();
    mutate(a, starts, blocks);
    EXPECT_THROW(host::linear_attention(a), std::invalid_argument);
    EXPECT_EQ(memcmp(c.state.data(), state0.data(), state0.size() * 4), 0);
    EXPECT_EQ(memcmp(c.out.data(), out0.data(), out0.size() * 4), 0);
  };
  using V = std::vector<int32_t>;
  rejects([](LinearAttnArgs& a, V&, V&) { a.num_seqs = -1; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.head_dim = -4; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.num_heads = -1; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.seq_starts = nullptr; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.has_initial_state = nullptr; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.state = nullptr; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.gate = nullptr; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.out = nullptr; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.state_block_stride = 3 * 16 - 1; });
  rejects([](LinearAttnArgs& a, V&, V&) { a.out_row_stride = 11; });
  rejects([](LinearAttnArgs&, V&, V& b) { b[1] = -2; });
  rejects([](LinearAttnArgs&, V& s, V&) { s[2] = s[1] - 1; });  // the second sequence ends early

  // What is not broken: a padded sequence needs no state, a 0-row one no q/k/v/gate/out.
  LinearAttnArgs a = c.args();
  std::vector<int32_t> blocks = {-1, -1};
  a.state_blocks = blocks.data();
  a.state = nullptr;
  host::linear_attention(a);
  EXPECT_EQ(memcmp(c.out.data(), out0.data(), out0.size() * 4), 0);
  a = c.args();
  std::vector<int32_t> starts = {1, 1, 1};
  a.seq_starts = starts.data();
  a.q = a.k = a.v = a.gate = nullptr;
  a.out = nullptr;
  host::linear_attention(a);
  EXPECT_EQ(memcmp(&c.state[2 * c.block_stride], &state0[2 * c.block_stride], 48 * 4), 0);
  for (int64_t e = 0; e < 48; ++e) ASSERT_EQ(c.state[4 * c.block_stride + e], 0.0f);
}

}  // namespace
}  // namespace kv::test
