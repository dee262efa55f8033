// fp8_cache_test.cpp — fp8 e4m3fn as a KV-cache dtype: the special codes (NaN, no Inf,
// saturation at ±448), the smallest subnormal and round-to-nearest-even ties, and
// round_through_scaled (what the reference assumes the cache holds) against what write_kv then
// load_k / gather_kv actually give back, bit for bit, for several scales.
#include <gtest/gtest.h>

#include <limits>

#include "kernel_test_support.h"

namespace kv::test {
namespace {

float pow2(int e) { return std::ldexp(1.0f, e); }

TEST(Fp8Cache, NanCodesDecodeToNanAndNonFiniteValuesEncodeToThem) {
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xff)));
  int nan_codes = 0;  // e4m3fn: those two and no other code is NaN, and none is Inf
  for (uint32_t c = 0; c < 256; ++c) {
    const float f = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    nan_codes += std::isnan(f) ? 1 : 0;
    EXPECT_FALSE(std::isinf(f)) << c;
  }
  EXPECT_EQ(nan_codes, 2);
  for (float x : {INFINITY, -INFINITY, NAN, -NAN, f32_from_bits(0x7f800001u)}) {
    const uint8_t code = f32_to_fp8_e4m3(x);
    EXPECT_EQ(code & 0x7f, 0x7f) << x;  // a NaN code, with the input's sign
    EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(code)));
  }
  EXPECT_EQ(f32_to_fp8_e4m3(INFINITY), 0x7f);
  EXPECT_EQ(f32_to_fp8_e4m3(-INFINITY), 0xff);
}

TEST(Fp8Cache, FiniteValuesAt448AndAboveSaturate) {
  const float big[] = {448.0f, 449.0f, 464.0f, 480.0f, 1e4f, std::numeric_limits<float>::max()};
  for (float x : big) {
    EXPECT_EQ(f32_to_fp8_e4m3(x), 0x7e) << x;
    EXPECT_EQ(f32_to_fp8_e4m3(-x), 0xfe) << x;
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(f32_to_fp8_e4m3(447.0f), 0x7e);  // nearest is 448
  EXPECT_EQ(f32_to_fp8_e4m3(431.0f), 0x7d);  // nearest is 416
}

TEST(Fp8Cache, SmallestSubnormalAndTiesToEven) {
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-9)), 0x01);  // the smallest subnormal, exactly
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), pow2(-9));
  EXPECT_EQ(f32_to_fp8_e4m3(-pow2(-9)), 0x81);
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-10)), 0x00);              // 0.5 unit: tie, even is 0
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-10) + pow2(-20)), 0x01);  // just above the tie
  EXPECT_EQ(f32_to_fp8_e4m3(3 * pow2(-10)), 0x02);          // 1.5 units: even is 2
  EXPECT_EQ(f32_to_fp8_e4m3(5 * pow2(-10)), 0x02);          // 2.5 units: even is 2
  EXPECT_EQ(f32_to_fp8_e4m3(7 * pow2(-10)), 0x04);          // 3.5 units: even is 4
  EXPECT_EQ(f32_to_fp8_e4m3(-5 * pow2(-10)), 0x82);
  // Normals (3 mantissa bits, spacing 2^-3 at 1): ties between codes go to the even mantissa.
  EXPECT_EQ(f32_to_fp8_e4m3(1.0f + pow2(-4)), 0x38);      // 1 | 1.125: 1 (mantissa 0)
  EXPECT_EQ(f32_to_fp8_e4m3(1.0f + 3 * pow2(-4)), 0x3a);  // 1.125 | 1.25: 1.25 (mantissa 2)
  EXPECT_EQ(f32_to_fp8_e4m3(-1.0f - 3 * pow2(-4)), 0xba);
  EXPECT_EQ(f32_to_fp8_e4m3(2.0f - pow2(-4)), 0x40);  // 1.875 | 2: 2 (carries the exponent)
  EXPECT_EQ(f32_to_fp8_e4m3(1.0f + pow2(-4) + pow2(-12)), 0x39);  // above the tie: up
}

// What write_kv stores and load_k / gather_kv give back is exactly round_through_scaled, for
// finite values in and out of range (saturating), signed zeros, subnormal results, and NaN/Inf.
TEST(Fp8Cache, RoundThroughScaledMatchesWriteThenLoadBitForBit) {
  Rng rng(71);
  for (float scale : {1.0f, 0.05f, 3.0f}) {
    SCOPED_TRACE(scale);
    std::vector<float> xs = random_floats(rng, 200, -30.0f, 30.0f);
    const std::vector<float> wide = random_floats(rng, 100, -3000.0f, 3000.0f);  // saturating
    xs.insert(xs.end(), wide.begin(), wide.end());
    for (float x : {0.0f, -0.0f, pow2(-9) * scale, 1e-4f, -1e-3f, 448.0f * scale, 449.0f * scale,
                    1e30f, INFINITY, -INFINITY, NAN})
      xs.push_back(x);
    const int32_t n = static_cast<int32_t>(xs.size()), bs = 16, nb = (n + bs - 1) / bs;
    TestCache c = make_test_cache(KvLayout::kv_separate, DType::fp8_e4m3, nb, bs, 1, 1);
    c.desc.v = c.desc.k;  // MLA-style: written once, K only
    c.desc.k_scale = c.desc.v_scale = scale;
    std::vector<int64_t> slots(n);
    std::iota(slots.begin(), slots.end(), 0);
    host::write_kv(WriteKvArgs{c.desc, xs.data(), nullptr, 1, 0, slots.data(), n});
    std::vector<int32_t> table(nb), lens = {n}, starts = {0, n};
    std::iota(table.begin(), table.end(), 0);
    std::vector<float> gathered(n);
    host::gather_kv(GatherKvArgs{c.desc, table.data(), nb, lens.data(), starts.data(),
                                 gathered.data(), nullptr, 1});
    for (int32_t i = 0; i < n; ++i) {
      const float want = round_through_scaled(xs[i], DType::fp8_e4m3, scale);
      const float loaded = load_k(c.desc, i / bs, i % bs, 0, 0);
      if (std::isnan(want)) {  // NaN and ±Inf inputs: stored as a NaN code
        ASSERT_TRUE(!std::isfinite(xs[i])) << xs[i];
        ASSERT_TRUE(std::isnan(loaded) && std::isnan(gathered[i])) << xs[i];
        continue;
      }
      ASSERT_EQ(f32_bits(loaded), f32_bits(want)) << xs[i];
      ASSERT_EQ(f32_bits(gathered[i]), f32_bits(want)) << xs[i];
      // And the reference's value is the nearest representable one, saturated at 448 * scale.
      ASSERT_TRUE(std::fabs(want) <= 448.0f * scale * (1 + 1e-6f)) << xs[i];
      if (std::fabs(xs[i] / scale) < 448.0f && std::fabs(xs[i] / scale) >= pow2(-6)) {
        ASSERT_FALSE(!(std::fabs(want - xs[i]) <= std::fabs(xs[i]) * 0.0625f)) << xs[i];
      }
    }
  }
}

// A scale that does not divide a value changes its rounding: the reference must use the scaled
// round trip, not round_through on the raw value.
TEST(Fp8Cache, TheScaleChangesTheStoredValue) {
  EXPECT_EQ(round_through_scaled(1.13f, DType::fp8_e4m3, 1.0f), 1.125f);  // spacing 1/8 at 1
  // 1.13 / 0.05 = 22.6 rounds to 22 (spacing 2 in [16, 32)): 1.1, not 1.125.
  EXPECT_FALSE(!(std::fabs(round_through_scaled(1.13f, DType::fp8_e4m3, 0.05f) - 1.1f) <= 1e-6f));
  EXPECT_EQ(round_through_scaled(3000.0f, DType::fp8_e4m3, 3.0f), 448.0f * 3.0f);
  EXPECT_EQ(round_through_scaled(3000.0f, DType::fp8_e4m3, 1.0f), 448.0f);
  EXPECT_EQ(round_through_scaled(0.3f, DType::f32, 0.05f), (0.3f / 0.05f) * 0.05f);
}

}  // namespace
}  // namespace kv::test
