// dense_gpu_test.cpp — CUDA vs host for the batch-wide fp8 op, the synthetic model's dense ops
// (quant_fp8, embed, rms_norm, linear (plain, grouped, bias, accumulate), argmax) and
// convert_rows, the bridge to a backend's conventions.
//
// Exact (bit for bit, NaN payloads aside): quant_fp8 (the scale is a max, order independent; the
// rest is IEEE division and conversions), argmax and convert_rows. Within float rounding: rms_norm and linear
// (relative L2 per row <= 1e-5: float sums of at most 600 terms in a different order, measured
// host error under 1e-6), embed (element error <= 2e-6 + 2.5e-7 * position: a rare one-ulp
// difference of pow's frequency moves the angle by up to position * 1.2e-7).
#include <sstream>

#include "gpu/gpu_test_support.h"

namespace kv::gpu_test {
namespace {

class GpuDense : public GpuTest {};

TEST_F(GpuDense, QuantFp8MatchesHostBitForBit) {
  SCOPED_TRACE(trace_seed());
  const int32_t cols = 37, real = 5, padded = 8;
  const int64_t stride = cols + 3;
  enum Poison { none, in_padded_row, in_real_row, all_zero };
  for (Poison p : {none, in_padded_row, in_real_row, all_zero})
    for (bool rows_from_device : {true, false})
      for (bool in_place : {false, true}) {
        SCOPED_TRACE("case " + std::to_string(p) + (rows_from_device ? " amax_rows*" : " fixed") +
                     (in_place ? " in place" : ""));
        std::vector<float> x = test::random_floats(rng_, padded * stride, -700.0f, 700.0f);
        x[1] = 1e-9f;  // subnormal after scaling
        if (p == in_padded_row) x[6 * stride + 2] = NAN;
        if (p == in_real_row) x[2 * stride + 4] = NAN;
        if (p == all_zero) std::fill(x.begin(), x.end(), 0.0f);
        const Twin tx = upload(x);
        const Twin ty = in_place ? tx : poisoned_floats(padded * stride);
        const Twin rows = upload(std::vector<int32_t>{real});
        const Twin scale = poisoned_floats(1);
        on_both([&](Device& d, Side s) {
          QuantFp8Args a;
          a.x = tx.p<float>(s);
          a.y = ty.p<float>(s);
          a.row_stride = stride;
          a.cols = cols;
          a.num_rows = padded;
          a.amax_rows = rows_from_device ? rows.p<int32_t>(s) : nullptr;
          a.amax_rows_fixed = rows_from_device ? 0 : padded;  // fixed: the seed-001 bug
          a.scale_out = scale.p<float>(s);
          d.quant_fp8(a);
        });
        EXPECT_TRUE(same_floats(get<float>(ty, Side::host, padded * stride),
                                get<float>(ty, Side::cuda, padded * stride)));
        EXPECT_TRUE(same_floats(get<float>(scale, Side::host, 1), get<float>(scale, Side::cuda, 1)));
      }
}

// convert_rows: the same element function on both sides, so the same bits, NaN included.
TEST_F(GpuDense, ConvertRowsMatchesHostBitForBit) {
  SCOPED_TRACE(trace_seed());
  const int32_t rows = 37, cols = 29, stride = 33;
  for (DType io : {DType::bf16, DType::f16}) {
    std::vector<float> x = test::random_floats(rng_, size_t(rows) * stride, -70000.0f, 70000.0f);
    x[3] = NAN;
    x[4] = -INFINITY;
    x[5] = 1e-7f;  // an f16 subnormal
    const Twin tx = upload(x);
    const Twin mid = poisoned_floats(size_t(rows) * stride);  // wide enough for 16-bit rows
    const Twin back = poisoned_floats(size_t(rows) * stride);
    on_both([&](Device& d, Side s) {
      d.convert_rows({.src = tx.p<float>(s), .src_row_stride = stride, .dst = mid.p<float>(s),
                      .dst_dtype = io, .dst_row_stride = stride, .rows = rows, .cols = cols,
                      .scale = 0.6931472f, .map_value = true, .match = -INFINITY,
                      .replace = INFINITY});
      d.convert_rows({.src = mid.p<float>(s), .src_dtype = io, .src_row_stride = stride,
                      .dst = back.p<float>(s), .dst_row_stride = stride, .rows = rows,
                      .cols = cols});
    });
    EXPECT_TRUE(same_floats(get<float>(back, Side::host, size_t(rows) * stride),
                            get<float>(back, Side::cuda, size_t(rows) * stride)));
  }
}

TEST_F(GpuDense, EmbedMatchesHost) {
  SCOPED_TRACE(trace_seed());
  for (int32_t hidden : {1, 64, 129}) {
    SCOPED_TRACE("hidden " + std::to_string(hidden));
    const int32_t vocab = 50, rows = 23;
    std::vector<int32_t> tokens(rows), positions(rows);
    for (int32_t r = 0; r < rows; ++r) {
      tokens[r] = test::random_int(rng_, 0, vocab - 1);
      positions[r] = test::random_int(rng_, 0, 5000);
    }
    tokens[3] = -1;     // poisoned padded rows: NaN rows on both devices
    tokens[9] = vocab;
    positions[0] = 0;
    positions[1] = 4095;
    const Twin tt = upload(tokens), tp = upload(positions);
    const Twin table = upload(test::random_floats(rng_, static_cast<size_t>(vocab) * hidden));
    const size_t n = static_cast<size_t>(rows + 1) * hidden;
    const Twin out = poisoned_floats(n);
    on_both([&](Device& d, Side s) {
      d.embed({tt.p<int32_t>(s), tp.p<int32_t>(s), table.p<float>(s), out.p<float>(s), rows,
               hidden, vocab});
    });
    const std::vector<float> h = get<float>(out, Side::host, n), c = get<float>(out, Side::cuda, n);
    for (size_t i = 0; i < n; ++i) {
      std::string why;
      ASSERT_TRUE(same_class(h[i], c[i], why)) << "element " << i << ": " << why;
      if (!std::isfinite(h[i]) || test::is_poison(h[i])) continue;
      const double tol = 2e-6 + 2.5e-7 * positions[i / hidden];
      ASSERT_LE(std::fabs(static_cast<double>(h[i]) - c[i]), tol)
          << "row " << i / hidden << " (position " << positions[i / hidden] << ") feature "
          << i % hidden << ": host " << show(h[i]) << ", cuda " << show(c[i]);
    }
  }
}

TEST_F(GpuDense, RmsNormMatchesHost) {
  SCOPED_TRACE(trace_seed());
  for (int32_t cols : {1, 63, 64, 1000})
    for (bool in_place : {false, true}) {
      SCOPED_TRACE("cols " + std::to_string(cols) + (in_place ? " in place" : ""));
      const int32_t rows = 7;
      std::vector<float> x = test::random_floats(rng_, static_cast<size_t>(rows) * cols, -5, 5);
      x[static_cast<size_t>(2) * cols] = NAN;  // row 2 becomes NaN
      const Twin tx = upload(x);
      const size_t n = static_cast<size_t>(rows + 1) * cols;
      const Twin out = in_place ? tx : poisoned_floats(n);
      on_both([&](Device& d, Side s) {
        d.rms_norm({tx.p<float>(s), out.p<float>(s), rows, cols, 1e-6f});
      });
      const size_t m = in_place ? x.size() : n;
      EXPECT_TRUE(close_rows(get<float>(out, Side::host, m), get<float>(out, Side::cuda, m), cols,
                             1e-5));
    }
}

TEST_F(GpuDense, LinearMatchesHostPlainGroupedBiasAccumulate) {
  SCOPED_TRACE(trace_seed());
  struct Shape {
    int32_t rows, in_dim, out_dim, groups;
  };
  const Shape shapes[] = {{1, 1, 1, 1},   {7, 37, 33, 1},  {45, 64, 128, 1},
                          {3, 576, 40, 1}, {5, 32, 40, 4}, {9, 40, 7, 3}};
  for (const Shape& sh : shapes)
    for (bool bias : {false, true})
      for (bool acc : {false, true}) {
        std::ostringstream o;
        o << "rows " << sh.rows << " in " << sh.in_dim << " out " << sh.out_dim << " groups "
          << sh.groups << (bias ? " bias" : "") << (acc ? " accumulate" : "");
        SCOPED_TRACE(o.str());
        const int64_t x_gs = sh.in_dim + (sh.groups > 1 ? 3 : 0);  // gaps between groups
        const int64_t x_stride = x_gs * sh.groups + 2;
        const int64_t out_stride = int64_t{sh.out_dim} * sh.groups + 1;
        const Twin x = upload(test::random_floats(rng_, sh.rows * x_stride));
        const Twin w = upload(
            test::random_floats(rng_, static_cast<size_t>(sh.groups) * sh.out_dim * sh.in_dim));
        const Twin b = upload(test::random_floats(rng_, static_cast<size_t>(sh.groups) * sh.out_dim));
        const size_t n = static_cast<size_t>(sh.rows + 1) * out_stride;
        // Accumulating needs defined outputs; otherwise poison shows what was not written.
        const Twin out = acc ? upload(test::random_floats(rng_, n)) : poisoned_floats(n);
        on_both([&](Device& d, Side s) {
          LinearArgs a;
          a.x = x.p<float>(s);
          a.x_row_stride = x_stride;
          a.w = w.p<float>(s);
          a.bias = bias ? b.p<float>(s) : nullptr;
          a.out = out.p<float>(s);
          a.out_row_stride = out_stride;
          a.num_rows = sh.rows;
          a.in_dim = sh.in_dim;
          a.out_dim = sh.out_dim;
          a.accumulate = acc;
          a.groups = sh.groups;
          a.x_group_stride = sh.groups > 1 ? x_gs : 0;
          d.linear(a);
        });
        EXPECT_TRUE(close_rows(get<float>(out, Side::host, n), get<float>(out, Side::cuda, n),
                               out_stride, 1e-5));
      }
}

TEST_F(GpuDense, ArgmaxMatchesHostTiesNaNAndInfinities) {
  SCOPED_TRACE(trace_seed());
  for (int32_t vocab : {1, 7, 128, 1000, 50257}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const int32_t rows = 9;
    std::vector<float> l = test::random_floats(rng_, static_cast<size_t>(rows) * vocab, -3, 3);
    auto at = [&](int32_t r, int32_t i) -> float& { return l[static_cast<size_t>(r) * vocab + i]; };
    at(1, vocab - 1) = 10.0f;  // a tie: the lowest index must win
    at(1, vocab / 2) = 10.0f;
    at(2, vocab / 3) = NAN;  // a NaN row gives -1
    for (int32_t i = 0; i < vocab; ++i) at(3, i) = -INFINITY;  // all -inf: index 0
    at(4, vocab - 1) = INFINITY;
    at(5, 0) = -0.0f;
    for (int32_t i = 0; i < vocab; ++i) at(6, i) = 1.5f;  // all equal: index 0
    const Twin tl = upload(l);
    const Twin out = upload(std::vector<int32_t>(rows + 1, -7));
    on_both([&](Device& d, Side s) {
      d.argmax({tl.p<float>(s), out.p<int32_t>(s), rows, vocab});
    });
    EXPECT_EQ(get<int32_t>(out, Side::host, rows + 1), get<int32_t>(out, Side::cuda, rows + 1));
  }
}

}  // namespace
}  // namespace kv::gpu_test
