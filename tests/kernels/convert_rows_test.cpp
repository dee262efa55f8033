// convert_rows_test.cpp — the engine's bridge to a backend's conventions (host op): float32 to
// bf16/f16 and back at the caller's strides, rounding to nearest even; NaN (the poison of an
// unwritten element) survives the round trip; the lse conversion scales and maps one value in
// place; elements outside [rows) x [cols) are never touched.
#include <cmath>

#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kernels/dtype.cuh"

namespace kv::test {
namespace {

TEST(ConvertRows, RoundTripsThroughTheIoDtypesAtTheCallersStrides) {
  Rng rng(7);
  for (DType io : {DType::bf16, DType::f16}) {
    for (int32_t rows : {0, 1, 3, 7}) {
      const int32_t cols = 5, stride = 8;
      std::vector<float> x = random_floats(rng, size_t(rows) * stride + 1, -3, 3);
      if (rows > 0) x[1] = NAN;  // a poisoned, unwritten element
      std::vector<uint16_t> mid(x.size(), 0xabcd);
      std::vector<float> back(x.size(), 42.0f);
      host::convert_rows({.src = x.data(), .src_dtype = DType::f32, .src_row_stride = stride,
                          .dst = mid.data(), .dst_dtype = io, .dst_row_stride = stride,
                          .rows = rows, .cols = cols});
      host::convert_rows({.src = mid.data(), .src_dtype = io, .src_row_stride = stride,
                          .dst = back.data(), .dst_dtype = DType::f32, .dst_row_stride = stride,
                          .rows = rows, .cols = cols});
      for (int32_t r = 0; r < rows; ++r)
        for (int32_t c = 0; c < stride; ++c) {
          const size_t i = size_t(r) * stride + c;
          if (c >= cols) {  // a gap between rows: untouched
            EXPECT_EQ(mid[i], 0xabcd);
            EXPECT_EQ(back[i], 42.0f);
            continue;
          }
          const float want = io == DType::bf16 ? bf16_to_f32(f32_to_bf16(x[i]))
                                               : f16_to_f32(f32_to_f16(x[i]));
          if (std::isnan(x[i]))
            EXPECT_TRUE(std::isnan(back[i]));
          else
            EXPECT_EQ(back[i], want) << r << "," << c;
        }
      EXPECT_EQ(back.back(), 42.0f);  // past the last row
    }
  }
}

TEST(ConvertRows, ConvertsLseBasesAndEmptyRowValuesInPlace) {
  std::vector<float> lse = {1.0f, -INFINITY, 2.5f, NAN, INFINITY, 0.0f};
  host::convert_rows({.src = lse.data(), .src_row_stride = 3, .dst = lse.data(),
                      .dst_row_stride = 3, .rows = 2, .cols = 3,
                      .scale = static_cast<float>(M_LOG2E), .map_value = true,
                      .match = -INFINITY, .replace = INFINITY});
  EXPECT_FLOAT_EQ(lse[0], static_cast<float>(M_LOG2E));
  EXPECT_EQ(lse[1], INFINITY);  // the empty row, in the backend's convention
  EXPECT_FLOAT_EQ(lse[2], 2.5f * static_cast<float>(M_LOG2E));
  EXPECT_TRUE(std::isnan(lse[3]));  // NaN stays NaN: a check still sees it
  EXPECT_EQ(lse[4], INFINITY);
  EXPECT_EQ(lse[5], 0.0f);
}

TEST(ConvertRows, RefusesFp8) {
  float x = 1.0f;
  uint8_t y = 0;
  EXPECT_THROW(host::convert_rows({.src = &x, .dst = &y, .dst_dtype = DType::fp8_e4m3,
                                   .rows = 1, .cols = 1}),
               std::invalid_argument);
}

}  // namespace
}  // namespace kv::test
