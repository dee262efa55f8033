// The lane sums of ref_sums.h against a plain float64 loop (long double as the yardstick) at
// every length that leaves a remainder, mixed operand types, and a NaN carried through.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "reference/host/ref_sums.h"

namespace kv {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(RefSums, AgreeWithALongDoubleSumAtEveryRemainder) {
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 16u, 127u, 576u}) {
    const std::vector<float> a = random_floats(n, 1 + static_cast<uint32_t>(n));
    const std::vector<float> bf = random_floats(n, 1000 + static_cast<uint32_t>(n));
    const std::vector<double> b(bf.begin(), bf.end());
    long double dot = 0, dot2 = 0, sq = 0;
    for (size_t i = 0; i < n; ++i) {
      const long double x = static_cast<long double>(a[i]) * b[i];
      dot += x;
      dot2 += x * x;
      sq += static_cast<long double>(a[i]) * a[i];
    }
    const double tol = 1e-13 * (1.0 + static_cast<double>(n));
    EXPECT_NEAR(ref::dot(a.data(), b.data(), n), static_cast<double>(dot), tol) << n;
    EXPECT_NEAR(ref::dot(b.data(), a.data(), n), static_cast<double>(dot), tol) << n;
    double s = 0, s2 = 0;
    ref::dot_and_squares(b.data(), a.data(), n, &s, &s2);
    EXPECT_NEAR(s, static_cast<double>(dot), tol) << n;
    EXPECT_NEAR(s2, static_cast<double>(dot2), tol) << n;
    EXPECT_NEAR(ref::squares(a.data(), n), static_cast<double>(sq), tol) << n;

    std::vector<double> out(n, 0.5);
    const double v2 = ref::add_scaled_row(0.25, a.data(), n, out.data());
    EXPECT_NEAR(v2, static_cast<double>(sq), tol) << n;
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], 0.5 + 0.25 * static_cast<double>(a[i])) << i;
  }
}

TEST(RefSums, ANaNInAnyLaneComesOut) {
  for (size_t at = 0; at < 7; ++at) {
    std::vector<float> a(7, 1.0f);
    std::vector<double> b(7, 1.0);
    a[at] = NAN;
    EXPECT_TRUE(std::isnan(ref::dot(a.data(), b.data(), a.size()))) << at;
    EXPECT_TRUE(std::isnan(ref::squares(a.data(), a.size()))) << at;
  }
}

}  // namespace
}  // namespace kv
