// op_reference_test.cpp — the float64 op over given inputs, and its error bound checked against
// naive implementations that round as a real kernel does (the yardstick of docs/oracle.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "check/tolerances.h"
#include "kernels/dtype.cuh"
#include "reference/host/op_reference.h"
#include "util/rng.h"

namespace kv {
namespace {

struct Case {
  int32_t n, dk, dv;
  double spread;  // the scores' scale: larger is a more peaked softmax
};

struct Inputs {
  std::vector<float> q, kv;  // kv: n rows of [dk keys | dv values]
  int64_t stride;
  OpHeadInputs head(const Case& c) const {
    OpHeadInputs in;
    in.q = q.data();
    in.k = kv.data();
    in.v = kv.data() + c.dk;
    in.stride = stride;
    in.n = c.n;
    in.dk = c.dk;
    in.dv = c.dv;
    in.scale = 1.0 / std::sqrt(static_cast<double>(c.dk));
    return in;
  }
};

// Random q, K and V, K and V rounded to bf16 as a cache stores them; value feature 0 is the same
// large number in every row (the model's sentinel: a feature a rounding of P moves coherently).
Inputs random_inputs(const Case& c, uint64_t seed) {
  Rng rng(seed);
  Inputs in;
  in.stride = c.dk + c.dv;
  for (int32_t i = 0; i < c.dk; ++i) in.q.push_back(static_cast<float>(c.spread * rng.normal()));
  for (int32_t t = 0; t < c.n; ++t)
    for (int64_t i = 0; i < in.stride; ++i)
      in.kv.push_back(round_through(static_cast<float>(rng.normal()), DType::bf16));
  for (int32_t t = 0; t < c.n; ++t) in.kv[t * in.stride + c.dk] = 8.0f;
  return in;
}

std::vector<double> naive_double(const OpHeadInputs& in) {
  std::vector<double> s(in.n), out(in.dv, 0.0);
  double m = -INFINITY, l = 0.0;
  for (int32_t t = 0; t < in.n; ++t) {
    double dot = 0.0;
    for (int32_t i = 0; i < in.dk; ++i) dot += double{in.q[i]} * in.k[t * in.stride + i];
    m = std::max(m, s[t] = dot * in.scale);
  }
  for (int32_t t = 0; t < in.n; ++t) l += std::exp(s[t] - m);
  for (int32_t t = 0; t < in.n; ++t)
    for (int32_t d = 0; d < in.dv; ++d)
      out[d] += std::exp(s[t] - m) / l * in.v[t * in.stride + d];
  return out;
}

float round_to(float x, double u) {
  if (u == kUnitRoundoffBf16) return round_through(x, DType::bf16);
  if (u == kUnitRoundoffF16) return round_through(x, DType::f16);
  return x;
}

// A naive kernel in float that rounds q, P and its output as `r` says (u_kv 0: the stored values
// are read exactly); keys in order, one running sum (the longest rounding chain).
std::vector<double> naive_float(const OpHeadInputs& in, const OpRounding& r) {
  std::vector<float> q(in.q, in.q + in.dk), s(in.n), acc(in.dv, 0.0f);
  for (float& x : q) x = round_to(x, r.u_q);
  float m = -INFINITY, l = 0.0f;
  for (int32_t t = 0; t < in.n; ++t) {
    float dot = 0.0f;
    for (int32_t i = 0; i < in.dk; ++i) dot += q[i] * in.k[t * in.stride + i];
    m = std::max(m, s[t] = dot * static_cast<float>(in.scale));
  }
  for (int32_t t = 0; t < in.n; ++t) {
    const float p = std::exp(s[t] - m);
    l += p;
    const float pr = round_to(p, r.u_p);
    for (int32_t d = 0; d < in.dv; ++d) acc[d] += pr * in.v[t * in.stride + d];
  }
  std::vector<double> out(in.dv);
  for (int32_t d = 0; d < in.dv; ++d) out[d] = round_to(acc[d] / l, r.u_out);
  return out;
}

double distance(const std::vector<double>& a, const double* b) {
  double e = 0.0;
  for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(e);
}

const Case kCases[] = {{1, 8, 8, 1.0},   {3, 7, 5, 1.0},    {7, 16, 16, 2.0}, {16, 64, 64, 1.0},
                       {33, 64, 64, 3.0}, {200, 128, 128, 1.0}, {513, 64, 64, 0.5},
                       {64, 576, 512, 1.0}, {1000, 128, 128, 2.0}};

TEST(OpReference, IsTheSoftmaxAverageOfItsInputs) {
  for (const Case& c : kCases) {
    const Inputs in = random_inputs(c, 11 + c.n);
    std::vector<double> out(c.dv);
    const double e = attend_op(in.head(c), OpRounding{}, out.data());
    const std::vector<double> want = naive_double(in.head(c));
    EXPECT_LT(distance(want, out.data()), 1e-11) << c.n << " keys";
    EXPECT_GT(e, 0.0);
    EXPECT_LT(e, 1e-4);  // float32 arithmetic only: a few float ulps of the output
  }
  Case one{1, 4, 4, 1.0};
  const Inputs in = random_inputs(one, 5);
  std::vector<double> out(4);
  attend_op(in.head(one), OpRounding{}, out.data());
  for (int32_t d = 0; d < 4; ++d) EXPECT_EQ(out[d], in.kv[4 + d]) << "one key: its value row";
}

TEST(OpReference, NoKeyIsTheEmptyRowWithNoError) {
  Case none{0, 8, 8, 1.0};
  const Inputs in = random_inputs(none, 1);
  std::vector<double> out(8, 1.0);
  EXPECT_EQ(attend_op(in.head(none), OpRounding{}, out.data()), 0.0);
  for (double x : out) EXPECT_EQ(x, 0.0);
}

// The bound covers naive kernels in each precision the checks assume, and is not more than ten
// times the largest error they make (too loose would let real bugs through).
void expect_bound_fits(const OpRounding& r, const char* what) {
  double largest = 0.0;
  for (const Case& c : kCases)
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      const Inputs in = random_inputs(c, seed * 1000 + c.n);
      std::vector<double> want(c.dv);
      const double e = attend_op(in.head(c), r, want.data());
      const double err = distance(naive_float(in.head(c), r), want.data());
      EXPECT_LE(err, kOpBoundSafety * e) << what << ": " << c.n << " keys, dk " << c.dk << ", seed "
                                         << seed;
      largest = std::max(largest, err / (kOpBoundSafety * e));
    }
  EXPECT_GT(largest, 0.1) << what << ": the bound is over ten times the largest error";
}

TEST(OpReference, BoundCoversAFloat32Kernel) { expect_bound_fits(OpRounding{}, "float32"); }

TEST(OpReference, BoundCoversBf16QAndP) {
  OpRounding r;
  r.u_q = r.u_p = kUnitRoundoffBf16;
  expect_bound_fits(r, "bf16 q and P");
}

TEST(OpReference, BoundCoversBf16Io) {
  OpRounding r;
  r.u_q = r.u_p = r.u_out = kUnitRoundoffBf16;
  expect_bound_fits(r, "bf16 q, P and output");
}

// The op lost the key of the largest weight (a block table entry that points elsewhere, a
// seq_len one short): far outside the bound of float32 ops and of ops rounding q and P to bf16,
// at every size. A 16-bit output rounds each feature by up to 2^-8 of it, as much as one key of
// hundreds of equal weights moves the average: there the op check catches such a loss only in
// short contexts, and the end-to-end check (every row, every layer after it) is what is left.
void expect_lost_key_caught(const OpRounding& r, int32_t max_keys, const char* what) {
  for (const Case& c : kCases) {
    if (c.n < 2 || c.n > max_keys) continue;
    const Inputs in = random_inputs(c, 77 + c.n);
    std::vector<double> want(c.dv);
    const double e = attend_op(in.head(c), r, want.data());
    std::vector<double> s(c.n);
    for (int32_t t = 0; t < c.n; ++t)
      for (int32_t i = 0; i < c.dk; ++i) s[t] += double{in.q[i]} * in.kv[t * in.stride + i];
    const int32_t lost = static_cast<int32_t>(std::max_element(s.begin(), s.end()) - s.begin());
    Inputs missing = in;
    missing.kv.erase(missing.kv.begin() + lost * in.stride,
                     missing.kv.begin() + (lost + 1) * in.stride);
    Case shorter = c;
    shorter.n -= 1;
    EXPECT_GT(distance(naive_double(missing.head(shorter)), want.data()), 3 * kOpBoundSafety * e)
        << what << ": " << c.n << " keys";
  }
}

TEST(OpReference, ALostKeyIsFarOutsideTheBound) {
  expect_lost_key_caught(OpRounding{}, 1 << 30, "float32");
  OpRounding r;
  r.u_q = r.u_p = kUnitRoundoffBf16;
  expect_lost_key_caught(r, 1 << 30, "bf16 q and P");
  r.u_out = kUnitRoundoffBf16;
  expect_lost_key_caught(r, 64, "bf16 io");
}

TEST(OpReference, ProjectedIsTheUpProjectionOfTheAverage) {
  const Case c{40, 24, 16, 1.0};
  const Inputs in = random_inputs(c, 9);
  Rng rng(4);
  const int32_t dout = 8;
  std::vector<float> w(static_cast<size_t>(dout) * c.dv);
  for (float& x : w) x = static_cast<float>(rng.normal() / 4);
  std::vector<double> lat(c.dv), out(dout);
  const double e_lat = attend_op(in.head(c), OpRounding{}, lat.data());
  const double e = attend_op_projected(in.head(c), OpRounding{}, w.data(), dout, out.data());
  for (int32_t d = 0; d < dout; ++d) {
    double want = 0.0;
    for (int32_t i = 0; i < c.dv; ++i) want += double{w[d * c.dv + i]} * lat[i];
    EXPECT_NEAR(out[d], want, 1e-12);
  }
  EXPECT_GT(e, 0.0);
  EXPECT_LT(e, e_lat * 10.0);
}

}  // namespace
}  // namespace kv
