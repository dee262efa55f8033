// Linear attention: the reference against a direct float64 recurrence written out here, over the
// whole model (two linear layers, their residual updates without the fp8 op, the LM head).
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_support.h"
#include "reference/host/ref_sequence.h"

namespace kv {
namespace {

using test::direct_matvec;
using test::small_spec;

// The two compute the same double expressions in a different order: only summation rounding.
constexpr double kSameMathTolerance = 1e-12;

TEST(RefLinear, MatchesADirectRecurrence) {
  const ModelWeights w = make_model_weights(small_spec({LayerKind::linear, LayerKind::linear}));
  const size_t H = 4, D = 8, n = 12;
  const std::vector<int32_t> tokens = test::random_tokens(21, static_cast<int32_t>(n), 50);
  RefSequence ref(w, test::cache_of(DType::fp8_e4m3, 0.05f, 0.05f));  // no cache: no effect
  ref.extend(tokens, static_cast<int32_t>(n));

  // The op's scale is 1 / sqrt(D) as the float the engine passes.
  ASSERT_NEAR(w.softmax_scale, 1.0 / std::sqrt(8.0), 0x1p-24);
  const double scale = w.softmax_scale;
  std::vector<std::vector<double>> S(2, std::vector<double>(H * D * D, 0.0));  // [layer][h][i][j]
  for (size_t pos = 0; pos < n; ++pos) {
    std::vector<double> h = test::embedded(w, tokens[pos], static_cast<int32_t>(pos));
    for (size_t l = 0; l < 2; ++l) {
      const LayerWeights& lw = w.layers[l];
      const std::vector<double> x = test::direct_rms_norm(h);
      const std::vector<double> q = direct_matvec(lw.wq, x), k = direct_matvec(lw.wk, x),
                                v = direct_matvec(lw.wv, x), gx = direct_matvec(lw.wg, x);
      std::vector<double> o(H * D, 0.0);
      for (size_t hd = 0; hd < H; ++hd) {
        const double g = 1.0 / (1.0 + std::exp(-(gx[hd] + lw.bg[hd])));
        // The gate forgets slowly but surely (model_weights.h: about 0.85 to 0.95).
        EXPECT_GT(g, 0.85);
        EXPECT_LT(g, 0.95);
        for (size_t i = 0; i < D; ++i)
          for (size_t j = 0; j < D; ++j) {
            double& s = S[l][(hd * D + i) * D + j];
            s = g * s + k[hd * D + i] * v[hd * D + j];
          }
        for (size_t j = 0; j < D; ++j)
          for (size_t i = 0; i < D; ++i)
            o[hd * D + j] += scale * q[hd * D + i] * S[l][(hd * D + i) * D + j];
      }
      EXPECT_LE(test::rel_l2(ref.attn_out(static_cast<int32_t>(pos), static_cast<int32_t>(l)),
                             o.data(), H * D),
                kSameMathTolerance)
          << "pos " << pos << " layer " << l;
      const std::vector<double> delta = direct_matvec(lw.wo, o);  // o itself: no fp8 op
      for (size_t i = 0; i < h.size(); ++i) h[i] += delta[i];
    }
    const std::vector<double> want = direct_matvec(w.lm_head, test::direct_rms_norm(h));
    const std::vector<double> got = ref.logits(static_cast<int32_t>(pos));
    EXPECT_LE(test::rel_l2(got.data(), want.data(), want.size()), kSameMathTolerance)
        << "pos " << pos;
  }
}

TEST(RefLinear, PositionZeroStartsFromAnEmptyState) {
  // S = k v^T at position 0, so o = scale (q . k) v per head.
  const ModelWeights w = make_model_weights(small_spec({LayerKind::linear}, 8));
  RefSequence ref(w, test::cache_of(DType::bf16));
  ref.extend({17}, 1);
  const LayerWeights& lw = w.layers[0];
  const std::vector<double> x = test::direct_rms_norm(test::embedded(w, 17, 0));
  const std::vector<double> q = direct_matvec(lw.wq, x), k = direct_matvec(lw.wk, x),
                            v = direct_matvec(lw.wv, x);
  for (size_t h = 0; h < 4; ++h) {
    double qk = 0.0;
    for (size_t i = 0; i < 8; ++i) qk += q[h * 8 + i] * k[h * 8 + i];
    for (size_t j = 0; j < 8; ++j) {
      const double want = w.softmax_scale * qk * v[h * 8 + j];
      EXPECT_NEAR(ref.attn_out(0, 0)[h * 8 + j], want,
                  kSameMathTolerance * (1.0 + std::fabs(want)));
    }
  }
}

}  // namespace
}  // namespace kv
