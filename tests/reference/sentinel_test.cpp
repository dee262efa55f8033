// The sentinel scheme of model_weights.h as the reference sees it: in every attention and mla
// layer, feature 0 of head 0 of o is exactly the sentinel as read back from the cache — the amax
// of every correct batch — and no element of o is larger, for every cache dtype and scale; with
// weights made for the cache, the constants read back as exactly themselves, also for calibrated
// (non-power-of-two) fp8 scales.
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_support.h"
#include "reference/host/ref_layers.h"
#include "reference/host/ref_sequence.h"

namespace kv {
namespace {

using test::all_caches;
using test::describe;
using test::small_spec;

float read_back_sentinel(const ModelWeights& w, size_t layer, const CacheSpec& c) {
  const bool fp8 = c.dtype == DType::fp8_e4m3;
  if (w.layers[layer].kind == LayerKind::attention)
    return round_through_scaled(w.sentinel, c.dtype, fp8 ? c.v_scale : 1.0f);
  return w.mla_sentinel / w.latent_constant *
         round_through_scaled(w.latent_constant, c.dtype, fp8 ? c.k_scale : 1.0f);
}

bool is_pow2(double x) {
  int exp = 0;
  return std::frexp(x, &exp) == 0.5;
}

// o of one attention-like layer at one position: the sentinel where it belongs, nothing larger.
testing::AssertionResult sentinel_holds(const ModelWeights& w, size_t layer, const CacheSpec& c,
                                        const double* o) {
  const ModelSpec& s = w.spec;
  const float rs = read_back_sentinel(w, layer, c);
  // The amax the op takes from a correct batch gives exactly the reference's scale.
  if (!(w.quant_scale(layer, c) == static_cast<float>(o[0]) / 448.0f))
    return testing::AssertionFailure()
           << "quant_scale " << w.quant_scale(layer, c) << " != o[0] / 448 with o[0] = " << o[0];
  if (!(w.quant_scale(layer, c) == rs / 448.0f))
    return testing::AssertionFailure() << "quant_scale * 448 != read-back sentinel " << rs;
  // Attention: every query head of KV group 0 reads the sentinel feature; mla: head 0 only.
  const int32_t heads =
      w.layers[layer].kind == LayerKind::attention ? s.num_q_heads / s.num_kv_heads : 1;
  for (int32_t h = 0; h < heads; ++h)
    if (!(o[h * s.head_dim] == static_cast<double>(rs)))
      return testing::AssertionFailure() << "head " << h << " feature 0 = " << o[h * s.head_dim]
                                         << ", read-back sentinel " << rs;
  for (int32_t j = 0; j < s.num_q_heads * s.head_dim; ++j)
    if (!(std::fabs(o[j]) <= rs))
      return testing::AssertionFailure() << "|o[" << j << "]| = " << std::fabs(o[j])
                                         << " exceeds the read-back sentinel " << rs;
  return testing::AssertionSuccess();
}

const std::vector<std::vector<LayerKind>> kLayouts = {
    {LayerKind::mla, LayerKind::linear, LayerKind::mla},
    {LayerKind::attention, LayerKind::linear},
    {LayerKind::mla},
    {LayerKind::attention},
    {LayerKind::attention, LayerKind::mla}};

TEST(Sentinel, WeightsCarryOnePowerOfTwo) {
  for (const auto& layers : kLayouts) {
    const ModelWeights w = make_model_weights(small_spec(layers));
    EXPECT_TRUE(is_pow2(w.sentinel)) << "not a power of two: " << w.sentinel;
    EXPECT_EQ(w.mla_sentinel, w.sentinel);
    EXPECT_EQ(w.latent_constant, 1.0f);
    for (const LayerWeights& lw : w.layers) {
      if (lw.kind == LayerKind::attention) {
        EXPECT_EQ(lw.bv[0], w.sentinel);
      } else if (lw.kind == LayerKind::mla) {
        EXPECT_EQ(lw.bdkv[0], 1.0f);
        EXPECT_EQ(lw.wuv[0], w.sentinel);
      }
    }
  }
}

// Scenarios with power-of-two scales keep the weights (and so the results) they had before
// calibrated scales were accepted: the same weights as for a bf16 cache.
TEST(Sentinel, PowerOfTwoScalesKeepTheWeights) {
  for (const auto& layers : kLayouts) {
    const ModelWeights bf16 = make_model_weights(small_spec(layers));
    for (const CacheSpec& c : {test::cache_of(DType::fp8_e4m3, 0.0625f, 0.125f),
                               test::cache_of(DType::fp8_e4m3, 1.0f, 0.25f),
                               test::cache_of(DType::f32), test::cache_of(DType::f16)}) {
      const ModelWeights w = make_model_weights(small_spec(layers), c);
      EXPECT_EQ(w.sentinel, bf16.sentinel) << describe(c);
      EXPECT_EQ(w.mla_sentinel, bf16.mla_sentinel) << describe(c);
      EXPECT_EQ(w.latent_constant, 1.0f) << describe(c);
      for (size_t l = 0; l < layers.size(); ++l) {
        EXPECT_EQ(w.layers[l].bv, bf16.layers[l].bv) << describe(c) << ", layer " << l;
        EXPECT_EQ(w.layers[l].bdkv, bf16.layers[l].bdkv) << describe(c) << ", layer " << l;
        EXPECT_EQ(w.layers[l].wuv, bf16.layers[l].wuv) << describe(c) << ", layer " << l;
      }
    }
  }
}

// A calibrated scale: each constant is a power-of-two multiple of the scale its cache reads it
// back with, so it survives the fp8 round trip exactly; the mla sentinel is a power-of-two
// multiple of the latent constant, so Wuv_0[0][0] is a power of two and the product exact.
TEST(Sentinel, CalibratedScalesReadBackExactly) {
  const std::vector<LayerKind> layers = {LayerKind::attention, LayerKind::mla};
  const ModelWeights bf16 = make_model_weights(small_spec(layers));
  for (const auto& [ks, vs] : {std::pair{0.0173f, 0.0221f}, std::pair{0.05f, 0.37f},
                               std::pair{0.3f, 0.0917f}, std::pair{3.1f, 1.7f}}) {
    const CacheSpec c = test::cache_of(DType::fp8_e4m3, ks, vs);
    const ModelWeights w = make_model_weights(small_spec(layers), c);
    EXPECT_TRUE(is_pow2(w.sentinel / vs)) << w.sentinel << " / " << vs;
    EXPECT_TRUE(is_pow2(w.latent_constant / ks)) << w.latent_constant << " / " << ks;
    EXPECT_TRUE(is_pow2(w.mla_sentinel / w.latent_constant)) << w.mla_sentinel;
    EXPECT_TRUE(is_pow2(w.layers[1].wuv[0])) << w.layers[1].wuv[0];
    EXPECT_EQ(w.layers[1].wuv[0] * w.latent_constant, w.mla_sentinel);
    EXPECT_EQ(round_through_scaled(w.latent_constant, c.dtype, ks), w.latent_constant);
    // The code saturates to 448 where the scale is too small for the model's values
    // (model_weights.h): every value then reads back at most 448 x v_scale, the sentinel too.
    const bool saturated = w.sentinel / vs > 256.0f;
    if (vs > 0.3f) {
      EXPECT_FALSE(saturated) << describe(c);  // 256 x v_scale is above this model's sentinel
    }
    const float read_back = saturated ? 448.0f * vs : w.sentinel;
    EXPECT_EQ(round_through_scaled(w.sentinel, c.dtype, vs), read_back) << describe(c);
    // The smallest multiple at or above the bf16 model's (power-of-two) sentinel, so that the
    // drift check's floor is not lower than with power-of-two scales; the latent constant within
    // sqrt(2) of 1.
    EXPECT_GE(w.sentinel, bf16.sentinel) << describe(c);
    EXPECT_LT(w.sentinel, bf16.sentinel * 2.0f) << describe(c);
    EXPECT_GE(w.mla_sentinel, bf16.sentinel) << describe(c);
    EXPECT_LT(w.mla_sentinel, bf16.sentinel * 2.0f) << describe(c);
    EXPECT_GE(w.latent_constant, 0.7f);
    EXPECT_LE(w.latent_constant, 1.42f);
    EXPECT_EQ(w.quant_scale(0, c), read_back / 448.0f);
    EXPECT_EQ(w.quant_scale(1, c), w.mla_sentinel / 448.0f);
  }
}

TEST(Sentinel, HoldsOnRandomSequencesForEveryCache) {
  for (const auto& layers : kLayouts) {
    const float pow2_sentinel = make_model_weights(small_spec(layers)).sentinel;
    for (const CacheSpec& c : all_caches()) {
      const ModelWeights w = make_model_weights(small_spec(layers), c);
      for (uint64_t seed : {11u, 12u}) {
        RefSequence ref(w, c);
        const std::vector<int32_t> tokens = test::random_tokens(seed, 24, w.spec.vocab_size);
        ref.extend(tokens, 24);
        double largest_other = 0.0;  // the largest |o| element that is not a sentinel feature
        for (int32_t pos = 0; pos < 24; ++pos) {
          for (size_t l = 0; l < layers.size(); ++l) {
            if (layers[l] == LayerKind::linear) continue;
            const double* o = ref.attn_out(pos, static_cast<int32_t>(l));
            ASSERT_TRUE(sentinel_holds(w, l, c, o))
                << describe(c) << ", layer " << l << " of " << layers.size() << ", pos " << pos;
            for (int32_t j = w.spec.head_dim; j < w.spec.num_q_heads * w.spec.head_dim; ++j)
              largest_other = std::max(largest_other, std::fabs(o[j]));
          }
        }
        // A bound so loose that the sentinel dwarfs every real value would make the drift check
        // of head 0 (whose norm the sentinel dominates) blind; within 16x of the power-of-two
        // sentinel is what the bounds give (a calibrated scale's sentinel is below twice that).
        EXPECT_GT(largest_other, pow2_sentinel / 16.0) << describe(c);
      }
    }
  }
}

TEST(Sentinel, QuantScaleOfALinearLayerIsAnError) {
  const ModelWeights w = make_model_weights(small_spec({LayerKind::attention, LayerKind::linear}));
  EXPECT_GT(w.quant_scale(0, test::cache_of(DType::bf16)), 0.0f);
  EXPECT_THROW(w.quant_scale(1, test::cache_of(DType::bf16)), std::logic_error);
}

// The bound must hold for any input, not only for token sequences: at position 0, o is the V row
// of the input itself, so feed each layer the x of norm sqrt(hidden) that maximises each V feature.
TEST(Sentinel, HoldsForTheWorstInputOfEveryFeature) {
  const ModelWeights w =
      make_model_weights(small_spec({LayerKind::attention, LayerKind::mla, LayerKind::mla}, 5));
  const size_t hid = static_cast<size_t>(w.spec.hidden_size);
  const size_t R = static_cast<size_t>(w.spec.kv_lora_rank);
  const size_t D = static_cast<size_t>(w.spec.head_dim);
  const size_t rows = static_cast<size_t>(w.spec.num_q_heads) * D;
  double worst = 0.0;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    const bool attn = lw.kind == LayerKind::attention;
    const size_t features = attn ? static_cast<size_t>(w.spec.num_kv_heads) * D : rows;
    for (size_t j = 1; j < features; ++j) {
      // v_j = m . x (+ a constant 0): attention m = Wv row j; mla m = sum_i Wuv[j][i] Wdkv[i].
      std::vector<double> m(hid, 0.0);
      for (size_t i = 0; i < hid; ++i) {
        if (attn)
          m[i] = lw.wv[j * hid + i];
        else
          for (size_t r = 1; r < R; ++r)
            m[i] += static_cast<double>(lw.wuv[j * R + r]) * lw.wdkv[r * hid + i];
      }
      double norm = 0.0;
      for (double e : m) norm += e * e;
      norm = std::sqrt(norm);
      worst = std::max(worst, norm * std::sqrt(static_cast<double>(hid)));
      for (double sign : {1.0, -1.0}) {
        std::vector<double> x(hid);
        for (size_t i = 0; i < hid; ++i)
          x[i] = sign * m[i] / norm * std::sqrt(static_cast<double>(hid));
        for (const CacheSpec& c : all_caches()) {
          std::vector<double> o(rows);
          make_ref_layer(w, l, c)->step(x, o.data());
          ASSERT_TRUE(sentinel_holds(w, l, c, o.data()))
              << describe(c) << ", layer " << l << ", feature " << j;
        }
      }
    }
  }
  // Each `worst` candidate is |v_j| of an actual input (before the cache rounds), so the sentinel
  // must be at least 1.15 x the largest of them.
  EXPECT_GE(w.sentinel, 1.15 * worst);
  EXPECT_GE(w.mla_sentinel, 1.15 * worst);
}

}  // namespace
}  // namespace kv
