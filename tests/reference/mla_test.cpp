// MLA: the reference computes the non-absorbed form of model_weights.h; the engine runs the
// absorbed form (q_lat = Wq_abs x over the latent rows, V = c, then Wuv per head). Here the two
// are computed side by side from the same rounded latent rows.
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_support.h"
#include "reference/host/ref_layers.h"

namespace kv {
namespace {

using test::small_spec;

// Wq_abs is folded in double from float Wuk and Wqn and rounded to float once, so absorbed and
// non-absorbed scores differ by that rounding (~1e-7 relative) and by summation order. 1e-5 leaves
// a wide margin while still failing on any wrong index, transpose or missing rope term (O(1)).
constexpr double kAbsorbedTolerance = 1e-5;

TEST(RefMla, WeightsFollowTheLatentConstantScheme) {
  const ModelWeights w = make_model_weights(small_spec({LayerKind::mla}));
  const LayerWeights& lw = w.layers[0];
  const size_t hid = 32, H = 4, D = 8, R = 12, P = 4;
  ASSERT_EQ(lw.wdkv.size(), (R + P) * hid);
  ASSERT_EQ(lw.wq_abs.size(), H * (R + P) * hid);
  for (size_t i = 0; i < hid; ++i) EXPECT_EQ(lw.wdkv[i], 0.0f);
  EXPECT_EQ(lw.bdkv[0], w.latent_constant);
  EXPECT_EQ(w.latent_constant, 1.0f);  // a bf16 cache: no scale
  for (size_t i = 1; i < R + P; ++i) EXPECT_EQ(lw.bdkv[i], 0.0f);
  for (size_t row = 0; row < H * D; ++row) {
    EXPECT_EQ(lw.wuk[row * R], 0.0f) << row;
    if (row > 0) {
      EXPECT_EQ(lw.wuv[row * R], 0.0f) << row;
    }
  }
  for (size_t r = 1; r < R; ++r) EXPECT_EQ(lw.wuv[r], 0.0f) << "row 0 of head 0 is (s, 0, ...)";

  for (size_t h = 0; h < H; ++h) {
    for (size_t r = 0; r < R + P; ++r) {
      for (size_t i = 0; i < hid; ++i) {
        double want = 0.0, scale = 0.0;
        if (r < R) {
          for (size_t d = 0; d < D; ++d) {
            const double t =
                static_cast<double>(lw.wuk[(h * D + d) * R + r]) * lw.wqn[(h * D + d) * hid + i];
            want += t;
            scale += std::fabs(t);
          }
        } else {
          want = lw.wqr[(h * P + r - R) * hid + i];
        }
        // One float rounding of the double fold: half an ulp of the result, plus summation order.
        EXPECT_LE(std::fabs(lw.wq_abs[(h * (R + P) + r) * hid + i] - want),
                  0x1p-24 * std::fabs(want) + 1e-15 * scale)
            << "head " << h << " row " << r << " col " << i;
      }
    }
  }
}

TEST(RefMla, AbsorbedScoresAndOutputsMatchTheNonAbsorbedReference) {
  const ModelWeights w = make_model_weights(small_spec({LayerKind::mla}, 7));
  const LayerWeights& lw = w.layers[0];
  const size_t hid = 32, H = 4, D = 8, R = 12, L = 16;
  for (const CacheSpec& c :
       {test::cache_of(DType::bf16), test::cache_of(DType::fp8_e4m3, 0.37f, 1.0f)}) {
    RefMla mla(w, 0, c);
    Rng rng(99);
    std::vector<double> o(H * D);
    for (int32_t pos = 0; pos < 8; ++pos) {
      const std::vector<double> x = test::random_x(rng, hid);
      mla.step(x, o.data());
      const std::vector<double> q_lat = test::direct_matvec(lw.wq_abs, x);  // [H][R + P]
      for (size_t h = 0; h < H; ++h) {
        const std::vector<double>& want = mla.last_scores()[h];
        ASSERT_EQ(want.size(), static_cast<size_t>(pos + 1));
        // Absorbed attention: scores of q_lat over the latent rows, output the average of c.
        std::vector<double> score(pos + 1), avg(R, 0.0);
        double largest = 0.0, m = -INFINITY, denom = 0.0;
        for (int32_t t = 0; t <= pos; ++t) {
          double dot = 0.0;
          for (size_t r = 0; r < L; ++r) dot += q_lat[h * L + r] * mla.latent(t)[r];
          score[t] = dot * static_cast<double>(w.mla_softmax_scale);
          largest = std::max(largest, std::fabs(want[t]));
          m = std::max(m, score[t]);
        }
        for (int32_t t = 0; t <= pos; ++t) {
          // Relative to the head's largest score: one score can be near zero, and it is the scale
          // of all of them that decides the softmax.
          EXPECT_LE(std::fabs(score[t] - want[t]), kAbsorbedTolerance * largest)
              << "pos " << pos << " head " << h << " t " << t;
          const double p = std::exp(score[t] - m);
          denom += p;
          for (size_t r = 0; r < R; ++r) avg[r] += p * mla.latent(t)[r];
        }
        for (double& a : avg) a /= denom;
        std::vector<double> o_abs(D, 0.0);
        for (size_t d = 0; d < D; ++d)
          for (size_t r = 0; r < R; ++r)
            o_abs[d] += static_cast<double>(lw.wuv[(h * D + d) * R + r]) * avg[r];
        EXPECT_LE(test::rel_l2(o_abs.data(), o.data() + h * D, D), kAbsorbedTolerance)
            << "pos " << pos << " head " << h;
      }
    }
  }
}

TEST(RefMla, LatentIsStoredLikeTheCacheStoresK) {
  const ModelWeights w = make_model_weights(small_spec({LayerKind::mla}));
  const CacheSpec c = test::cache_of(DType::fp8_e4m3, 0.05f, 1.0f);
  RefMla mla(w, 0, c);
  Rng rng(5);
  const std::vector<double> x = test::random_x(rng, 32);
  std::vector<double> o(32);
  mla.step(x, o.data());
  const std::vector<double> lat = test::direct_matvec(w.layers[0].wdkv, x);
  for (size_t i = 0; i < 16; ++i) {
    const float want = round_through_scaled(static_cast<float>(lat[i] + w.layers[0].bdkv[i]),
                                            DType::fp8_e4m3, 0.05f);
    EXPECT_EQ(mla.latent(0)[i], want) << i;
  }
  // At position 0 o_h = Wuv_h c_0 whatever the scores.
  for (size_t row = 0; row < 32; ++row) {
    double v = 0.0;
    for (size_t r = 0; r < 12; ++r)
      v += static_cast<double>(w.layers[0].wuv[row * 12 + r]) * mla.latent(0)[r];
    EXPECT_NEAR(o[row], v, 1e-12 * (1.0 + std::fabs(v))) << row;
  }
}

}  // namespace
}  // namespace kv
