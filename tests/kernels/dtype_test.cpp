// dtype_test.cpp — the storage conversions of kernels/dtype.cuh: rounding, NaN, overflow,
// saturation, subnormals, and exhaustive round trips of every code.
#include "kernels/dtype.cuh"

#include <gtest/gtest.h>

#include <cmath>

namespace kv {
namespace {

float pow2(int e) { return std::ldexp(1.0f, e); }

// Every 16-bit code decodes to a float that encodes back to the same code; a NaN code to a NaN.
void expect_every_code_round_trips(float (*decode)(uint16_t), uint16_t (*encode)(float)) {
  for (uint32_t c = 0; c < 0x10000u; ++c) {
    const float f = decode(static_cast<uint16_t>(c));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(decode(encode(f)))) << c;
      continue;
    }
    ASSERT_EQ(encode(f), c) << c;
  }
}

TEST(Bf16, RoundsToNearestEvenOnTies) {
  EXPECT_EQ(f32_to_bf16(1.0f + pow2(-8)), 0x3f80);      // tie between 1 and 1+2^-7: even (down)
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * pow2(-8)), 0x3f82);  // tie between 1+2^-7 and 1+2^-6: even (up)
  EXPECT_EQ(f32_to_bf16(1.0f + pow2(-8) + pow2(-20)), 0x3f81);  // just above the tie: up
  EXPECT_EQ(f32_to_bf16(-1.0f - pow2(-8)), 0xbf80);
}

TEST(Bf16, NanStaysNanAndOverflowIsInf) {
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f32_from_bits(0x7f800001u)))));  // tiny payload
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds up to Inf
}

TEST(Bf16, EveryCodeRoundTrips) { expect_every_code_round_trips(bf16_to_f32, f32_to_bf16); }

TEST(F16, RoundsToNearestEvenOnTies) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + pow2(-11)), 0x3c00);      // tie: even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * pow2(-11)), 0x3c02);  // tie: even (up)
  EXPECT_EQ(f32_to_f16(2047.0f + 0.5f), 0x67ff + 1);    // 2047.5: tie between 2047 and 2048 -> 2048
}

TEST(F16, OverflowGoesToInfAndNanStaysNan) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the tie with 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // the tie rounds to even: Inf
  EXPECT_EQ(f32_to_f16(1e9f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(-NAN))));
}

TEST(F16, Subnormals) {
  EXPECT_EQ(f32_to_f16(pow2(-24)), 0x0001);
  EXPECT_EQ(f32_to_f16(pow2(-25)), 0x0000);      // tie between 0 and 2^-24: even
  EXPECT_EQ(f32_to_f16(3 * pow2(-25)), 0x0002);  // tie between 1 and 2 units: even
  EXPECT_EQ(f32_to_f16(pow2(-14) - pow2(-24)), 0x03ff);
  EXPECT_EQ(f32_to_f16(pow2(-14) - pow2(-26)), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(f16_to_f32(0x8001), -pow2(-24));
}

TEST(F16, EveryCodeRoundTrips) { expect_every_code_round_trips(f16_to_f32, f32_to_f16); }

TEST(Fp8E4m3, SaturatesFiniteValuesTo448) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f32_to_fp8_e4m3(448.0f), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(464.0f), 0x7e);  // would round past 448: saturates, not NaN
  EXPECT_EQ(f32_to_fp8_e4m3(1e6f), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(-1e6f), 0xfe);
  EXPECT_EQ(f32_to_fp8_e4m3(420.0f), 0x7d);  // 416 + 4 < half-way to 448: 416
  EXPECT_EQ(f32_to_fp8_e4m3(432.0f), 0x7e);  // tie between 416 (odd code) and 448: even
}

TEST(Fp8E4m3, NanAndInfBecomeNanCodes) {
  EXPECT_EQ(f32_to_fp8_e4m3(NAN), 0x7f);
  EXPECT_EQ(f32_to_fp8_e4m3(-NAN), 0xff);
  EXPECT_EQ(f32_to_fp8_e4m3(INFINITY), 0x7f);
  EXPECT_EQ(f32_to_fp8_e4m3(-INFINITY), 0xff);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xff)));
}

TEST(Fp8E4m3, Subnormals) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), pow2(-9));
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-9)), 0x01);
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-10)), 0x00);             // tie with 0: even
  EXPECT_EQ(f32_to_fp8_e4m3(3 * pow2(-10)), 0x02);         // tie between 1 and 2 units: even
  EXPECT_EQ(f32_to_fp8_e4m3(pow2(-6) - pow2(-11)), 0x08);  // rounds up into the smallest normal
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), pow2(-6));
  EXPECT_EQ(f32_to_fp8_e4m3(-0.0f), 0x80);
}

TEST(Fp8E4m3, EveryCodeDecodesAndReencodesToItself) {
  for (uint32_t c = 0; c < 256u; ++c) {
    const float f = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    if (c == 0x7f || c == 0xff) {
      EXPECT_TRUE(std::isnan(f)) << c;
      continue;
    }
    ASSERT_FALSE(std::isnan(f)) << c;
    ASSERT_EQ(f32_to_fp8_e4m3(f), c) << c;
  }
}

TEST(Fp8E4m3, RoundingErrorIsAtMostHalfAnUlp) {
  // 3 mantissa bits: a normal value is within 2^-4 relative of its code; below 2^-6 the absolute
  // error is at most half a subnormal unit (2^-10).
  for (float x = -500.0f; x <= 500.0f; x += 0.37f) {
    const float r = fp8_e4m3_to_f32(f32_to_fp8_e4m3(x));
    const float ax = std::fabs(x);
    if (ax > 448.0f) {
      EXPECT_EQ(std::fabs(r), 448.0f) << x;
      continue;
    }
    EXPECT_TRUE(std::fabs(r - x) <= std::fmax(ax * 0.0625f, pow2(-10))) << x << " -> " << r;
  }
}

TEST(GenericAccess, StoreThenLoadEqualsRoundThrough) {
  const float xs[] = {0.0f, -0.0f, 1.0f / 3.0f, -2.75f, 300.0f, 1e-5f, 70000.0f};
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    unsigned char buf[32] = {};
    for (float x : xs) {
      store_from_f32(buf, 3, t, x);
      const float got = load_as_f32(buf, 3, t);
      const float want = round_through(x, t);
      EXPECT_EQ(f32_bits(got), f32_bits(want)) << static_cast<int>(t) << " " << x;
    }
  }
  EXPECT_EQ(dtype_size(DType::f32), 4);
  EXPECT_EQ(dtype_size(DType::bf16), 2);
  EXPECT_EQ(dtype_size(DType::fp8_e4m3), 1);
}

}  // namespace
}  // namespace kv
