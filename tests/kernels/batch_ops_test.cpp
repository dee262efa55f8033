// batch_ops_test.cpp — the batch-wide fp8 quantise-dequantise (rows read for amax vs rows
// written, NaN spreading through the shared scale) and the dense ops of the synthetic model.
#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kernels/model_math.cuh"

namespace kv::test {
namespace {

struct QuantCase {
  int32_t rows = 8, cols = 37, stride = 40;
  std::vector<float> x, y;
  float scale = -1.0f;
  QuantCase(Rng& rng) : x(random_floats(rng, size_t(rows) * stride, -5, 5)), y(x.size()) {
    poison(y);
  }
  QuantFp8Args args(int32_t num_rows, const int32_t* amax_rows, int32_t fixed) {
    return {x.data(), y.data(), stride, cols, num_rows, amax_rows, fixed, &scale};
  }
};

TEST(QuantFp8, QuantisesRealRowsWithinHalfAnFp8Ulp) {
  Rng rng(41);
  QuantCase c(rng);
  const int32_t real = 5;
  c.x[2 * c.stride + 7] = -9.0f;  // the amax, inside the real rows
  const std::vector<float> x0 = c.x;
  host::quant_fp8(c.args(real, &real, 99));
  EXPECT_EQ(c.scale, 9.0f / 448.0f);
  for (int32_t r = 0; r < c.rows; ++r)
    for (int32_t i = 0; i < c.stride; ++i) {
      const float y = c.y[r * c.stride + i], x = x0[r * c.stride + i];
      if (r >= real || i >= c.cols) {
        ASSERT_TRUE(is_poison(y)) << r << " " << i;
        continue;
      }
      // e4m3: relative error <= 2^-4 for normals, absolute <= scale * 2^-10 below 2^-6 * scale.
      ASSERT_FALSE(!(std::fabs(y - x) <= std::fabs(x) * 0.0625f + c.scale * 0.0009765625f))
          << x << " " << y;
    }
  EXPECT_FALSE(!(std::fabs(c.y[2 * c.stride + 7] + 9.0f) <= 1e-5f));  // amax maps to ±448·scale
  EXPECT_TRUE(c.x == x0);  // x is only read when y is another buffer
}

TEST(QuantFp8, NanInAPaddedRowInsideAmaxRowsSpoilsEveryRow) {
  Rng rng(42);
  const int32_t real = 3, captured = 7;
  for (bool by_pointer : {true, false}) {
    QuantCase c(rng);
    c.x[5 * c.stride + 11] = NAN;  // a padded row's stale output
    host::quant_fp8(by_pointer ? c.args(real, &captured, 0) : c.args(real, nullptr, captured));
    EXPECT_TRUE(std::isnan(c.scale));
    for (int32_t r = 0; r < real; ++r)
      for (int32_t i = 0; i < c.cols; ++i) ASSERT_TRUE(std::isnan(c.y[r * c.stride + i]));
    for (int32_t i = 0; i < c.stride; ++i) ASSERT_TRUE(is_poison(c.y[5 * c.stride + i]));

    // The fix: amax over the real rows only.
    poison(c.y);
    host::quant_fp8(by_pointer ? c.args(real, &real, captured) : c.args(real, nullptr, real));
    EXPECT_TRUE(std::isfinite(c.scale));
    for (int32_t r = 0; r < real; ++r) ASSERT_TRUE(all_finite(&c.y[r * c.stride], c.cols));
  }
}

TEST(QuantFp8, ZeroAmaxCopiesAndInPlaceWorks) {
  Rng rng(43);
  QuantCase c(rng);
  std::fill(c.x.begin(), c.x.end(), 0.0f);
  host::quant_fp8(c.args(4, nullptr, 4));
  EXPECT_EQ(c.scale, 0.0f);
  for (int32_t r = 0; r < 4; ++r)
    for (int32_t i = 0; i < c.cols; ++i) ASSERT_EQ(c.y[r * c.stride + i], 0.0f);

  QuantCase d(rng);
  std::vector<float> expect(d.x.size());
  QuantFp8Args a = d.args(6, nullptr, 6);
  a.y = expect.data();
  host::quant_fp8(a);
  a.y = d.x.data();  // in place
  host::quant_fp8(a);
  for (int32_t r = 0; r < 6; ++r)
    for (int32_t i = 0; i < d.cols; ++i) ASSERT_EQ(d.x[r * d.stride + i], expect[r * d.stride + i]);
}

// ---- dense ops ---------------------------------------------------------------------------------

TEST(Embed, TableRowPlusPositionCode) {
  Rng rng(44);
  const int32_t vocab = 11, hidden = 18, rows = 5;
  const std::vector<float> table = random_floats(rng, size_t(vocab) * hidden);
  const std::vector<int32_t> tokens = {3, 0, 10, 3, 11}, positions = {0, 1, 77, 300, 2};
  std::vector<float> out(size_t(rows) * hidden);
  poison(out);
  host::embed({tokens.data(), positions.data(), table.data(), out.data(), rows, hidden, vocab});
  for (int32_t r = 0; r < 4; ++r)
    for (int32_t i = 0; i < hidden; ++i) {
      const double ref =
          table[tokens[r] * hidden + i] + position_code<double>(positions[r], i, hidden);
      // Float sin/cos of angles up to 300 rad: angle rounding ~300 · 6e-8 ≈ 2e-5.
      ASSERT_FALSE(!(std::fabs(out[r * hidden + i] - ref) <= 1e-4)) << r << " " << i;
    }
  for (int32_t i = 0; i < hidden; ++i)
    ASSERT_TRUE(std::isnan(out[4 * hidden + i]));  // token 11: out of range
  // The formula itself: even features are sin, odd cos, frequency 10000^(-2j/H).
  EXPECT_DOUBLE_EQ(position_code<double>(5, 0, 8), std::sin(5.0));
  EXPECT_DOUBLE_EQ(position_code<double>(5, 1, 8), std::cos(5.0));
  EXPECT_DOUBLE_EQ(position_code<double>(5, 2, 8), std::sin(5.0 * std::pow(10000.0, -2.0 / 8)));
  EXPECT_DOUBLE_EQ(position_code<double>(5, 7, 8), std::cos(5.0 * std::pow(10000.0, -6.0 / 8)));
}

TEST(RmsNorm, MatchesReferenceInPlaceToo) {
  Rng rng(45);
  const int32_t rows = 5, cols = 23;
  std::vector<float> x = random_floats(rng, size_t(rows) * cols, -3, 3), out(x.size());
  x[cols] = NAN;  // row 1 is NaN throughout: the NaN spreads through the shared rms
  host::rms_norm({x.data(), out.data(), rows, cols, 1e-6f});
  for (int32_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (int32_t i = 0; i < cols; ++i) ss += double(x[r * cols + i]) * x[r * cols + i];
    const double inv = 1.0 / std::sqrt(ss / cols + 1e-6);
    for (int32_t i = 0; i < cols; ++i) {
      if (r == 1) {
        ASSERT_TRUE(std::isnan(out[r * cols + i]));
        continue;
      }
      // A float sum of 23 squares and one rsqrt: relative error a few 1e-7.
      const double ref = x[r * cols + i] * inv;
      ASSERT_FALSE(!(std::fabs(out[r * cols + i] - ref) <= 2e-6 * (1 + std::fabs(ref))));
    }
  }
  std::vector<float> y = x;
  host::rms_norm({y.data(), y.data(), rows, cols, 1e-6f});
  for (size_t i = cols * 2; i < y.size(); ++i) ASSERT_EQ(y[i], out[i]);
}

TEST(Linear, MatchesReferenceWithBiasAndAccumulate) {
  Rng rng(46);
  const int32_t rows = 5, in = 23, outd = 7, xs = in + 3, os = outd + 2;
  const std::vector<float> x = random_floats(rng, size_t(rows) * xs),
                           w = random_floats(rng, size_t(outd) * in);
  const std::vector<float> bias = random_floats(rng, outd);
  for (bool with_bias : {false, true})
    for (bool acc : {false, true}) {
      std::vector<float> out = random_floats(rng, size_t(rows) * os);
      const std::vector<float> before = out;
      host::linear({x.data(), xs, w.data(), with_bias ? bias.data() : nullptr, out.data(), os, rows,
                    in, outd, acc});
      for (int32_t r = 0; r < rows; ++r) {
        for (int32_t o = 0; o < outd; ++o) {
          double ref = with_bias ? bias[o] : 0.0;
          for (int32_t i = 0; i < in; ++i) ref += double(w[o * in + i]) * x[r * xs + i];
          if (acc) ref += before[r * os + o];
          // 23-term float dot product of values in [-1, 1]: absolute error below 1e-5.
          ASSERT_FALSE(!(std::fabs(out[r * os + o] - ref) <= 1e-5)) << r << " " << o;
        }
        for (int32_t o = outd; o < os; ++o) ASSERT_EQ(out[r * os + o], before[r * os + o]);
      }
    }
}

// Grouped (per-head) linear: group g reads x[r][g * x_group_stride ..+ in_dim), its own W and bias
// block, and writes out[r][g * out_dim ..+ out_dim). x_group_stride > in_dim leaves gaps in x
// (poisoned with NaN here: reading one would show).
TEST(Linear, GroupedMatchesPerGroupReference) {
  Rng rng(47);
  for (int32_t groups : {1, 3, 8})
    for (int32_t gap : {0, 5})
      for (bool acc : {false, true}) {
        SCOPED_TRACE(testing::Message() << "groups " << groups << " gap " << gap << " acc " << acc);
        const int32_t rows = 5, in = 7, outd = 6;
        const int64_t gs = in + gap, xs = groups * gs + 3, os = groups * outd + 2;
        std::vector<float> x = random_floats(rng, size_t(rows) * xs);
        for (int32_t r = 0; r < rows; ++r)
          for (int32_t g = 0; g < groups; ++g)
            for (int64_t i = in; i < gs; ++i) x[r * xs + g * gs + i] = NAN;
        const std::vector<float> w = random_floats(rng, size_t(groups) * outd * in);
        const std::vector<float> bias = random_floats(rng, size_t(groups) * outd);
        std::vector<float> out = random_floats(rng, size_t(rows) * os);
        const std::vector<float> before = out;
        LinearArgs a{x.data(), xs, w.data(), bias.data(), out.data(), os, rows, in, outd, acc};
        a.groups = groups;
        a.x_group_stride = gap == 0 ? 0 : gs;  // 0 means in_dim: the same as gs without a gap
        host::linear(a);
        for (int32_t r = 0; r < rows; ++r) {
          for (int32_t g = 0; g < groups; ++g)
            for (int32_t o = 0; o < outd; ++o) {
              double ref = bias[g * outd + o];
              for (int32_t i = 0; i < in; ++i)
                ref += double(w[(int64_t(g) * outd + o) * in + i]) * x[r * xs + g * gs + i];
              if (acc) ref += before[r * os + g * outd + o];
              // A 7-term float dot product of values in [-1, 1] plus two additions: < 1e-5.
              const double err = std::fabs(out[r * os + g * outd + o] - ref);
              ASSERT_FALSE(!(err <= 1e-5)) << r << " " << g << " " << o;
            }
          for (int64_t o = int64_t(groups) * outd; o < os; ++o)
            ASSERT_EQ(out[r * os + o], before[r * os + o]);
        }
      }
  LinearArgs bad;
  bad.groups = 0;
  EXPECT_THROW(host::linear(bad), std::invalid_argument);
}

TEST(Argmax, LowestIndexWinsTiesAndNanGivesMinusOne) {
  const int32_t vocab = 6;
  const std::vector<float> logits = {
      1,         5,         5,         2,         5,        0,    // tie: 1
      -INFINITY, -INFINITY, -INFINITY, -INFINITY, -3,       -3,   // 4
      9,         1,         1,         1,         1,        NAN,  // NaN: -1
      NAN,       1,         1,         1,         1,        1,    // NaN first: -1
      INFINITY,  1,         1,         1,         INFINITY, 2,    // 0
  };
  std::vector<int32_t> tokens(5, 99);
  host::argmax({logits.data(), tokens.data(), 5, vocab});
  EXPECT_EQ(tokens, (std::vector<int32_t>{1, 4, -1, -1, 0}));
}

}  // namespace
}  // namespace kv::test
