// Tests of the float64 reference: the properties the checks rely on, for every layer kind.
#include "reference/host/ref_sequence.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/model_weights.h"
#include "ref_test_support.h"

namespace kv {
namespace {

using test::cache_of;
using test::small_spec;

const std::vector<std::vector<LayerKind>> kLayouts = {
    {LayerKind::attention},
    {LayerKind::mla},
    {LayerKind::linear},
    {LayerKind::mla, LayerKind::linear, LayerKind::mla},
    {LayerKind::attention, LayerKind::linear}};

constexpr int32_t kQDim = 4 * 8;

TEST(RefSequence, FirstPositionAttendsOnlyToItself) {
  // At position 0 softmax has one key: the output is that token's V row, rounded like the cache.
  const ModelWeights w =
      make_model_weights(small_spec({LayerKind::attention, LayerKind::attention}));
  RefSequence a(w, cache_of(DType::f32)), b(w, cache_of(DType::bf16));
  RefSequence c(w, cache_of(DType::fp8_e4m3, 1.0f, 0.37f));
  a.extend({7}, 1);
  b.extend({7}, 1);
  c.extend({7}, 1);
  for (int32_t j = 0; j < kQDim; ++j) {
    const float v = static_cast<float>(a.attn_out(0, 0)[j]);
    EXPECT_EQ(static_cast<double>(round_through(v, DType::bf16)), b.attn_out(0, 0)[j]) << j;
    EXPECT_EQ(static_cast<double>(round_through_scaled(v, DType::fp8_e4m3, 0.37f)),
              c.attn_out(0, 0)[j])
        << j;
  }
}

// Position 0 of attention and mla does not depend on the query; position 1 does.
TEST(RefSequence, FirstPositionIgnoresTheQuery) {
  for (LayerKind kind : {LayerKind::attention, LayerKind::mla}) {
    const ModelWeights w = make_model_weights(small_spec({kind}));
    ModelWeights scaled = w;
    for (auto* q : {&scaled.layers[0].wq, &scaled.layers[0].wqn, &scaled.layers[0].wqr})
      for (float& e : *q) e *= 3.0f;
    RefSequence a(w, cache_of(DType::bf16)), b(scaled, cache_of(DType::bf16));
    a.extend({4, 9}, 2);
    b.extend({4, 9}, 2);
    double diff1 = 0.0;
    for (int32_t j = 0; j < kQDim; ++j) {
      EXPECT_EQ(a.attn_out(0, 0)[j], b.attn_out(0, 0)[j]) << to_string(kind) << " " << j;
      diff1 += std::fabs(a.attn_out(1, 0)[j] - b.attn_out(1, 0)[j]);
    }
    EXPECT_GT(diff1, 1e-3) << to_string(kind);
  }
}

TEST(RefSequence, ExtendIsIncrementalAndDeterministic) {
  const std::vector<int32_t> tokens = test::random_tokens(4, 10, 50);
  for (const auto& layers : kLayouts) {
    const ModelWeights w = make_model_weights(small_spec(layers));
    const CacheSpec c = cache_of(DType::fp8_e4m3, 0.37f, 0.05f);
    RefSequence whole(w, c), steps(w, c), chunks(w, c);
    whole.extend(tokens, 10);
    for (int32_t n = 1; n <= 10; ++n) steps.extend(tokens, n);
    for (int32_t n : {3, 3, 7, 10}) chunks.extend(tokens, n);  // a repeated n adds nothing
    EXPECT_EQ(steps.length(), 10);
    EXPECT_EQ(chunks.length(), 10);
    for (int32_t pos = 0; pos < 10; ++pos) {
      for (int32_t l = 0; l < static_cast<int32_t>(layers.size()); ++l)
        for (int32_t j = 0; j < kQDim; ++j) {
          ASSERT_EQ(whole.attn_out(pos, l)[j], steps.attn_out(pos, l)[j]) << pos << " " << l;
          ASSERT_EQ(whole.attn_out(pos, l)[j], chunks.attn_out(pos, l)[j]) << pos << " " << l;
        }
      EXPECT_EQ(whole.logits(pos), steps.logits(pos));
      EXPECT_EQ(whole.logits(pos), chunks.logits(pos));
    }
  }
}

TEST(RefSequence, HistoryChangesLaterOutputsNotEarlierOnes) {
  for (const auto& layers : kLayouts) {
    const ModelWeights w = make_model_weights(small_spec(layers));
    RefSequence a(w, cache_of(DType::f32)), b(w, cache_of(DType::f32));
    a.extend({1, 2, 3}, 3);
    b.extend({1, 9, 3}, 3);
    const int32_t last = static_cast<int32_t>(layers.size()) - 1;
    double diff = 0.0;
    for (int32_t j = 0; j < kQDim; ++j) {
      diff += std::fabs(a.attn_out(2, last)[j] - b.attn_out(2, last)[j]);
      EXPECT_EQ(a.attn_out(0, last)[j], b.attn_out(0, last)[j]);  // position 0 sees no future
    }
    EXPECT_GT(diff, 1e-3) << "layer kinds " << layers.size();
    EXPECT_EQ(a.logits(0), b.logits(0));
  }
}

TEST(RefSequence, OutputsAreFiniteAndNotTrivial) {
  for (const auto& layers : kLayouts) {
    const ModelWeights w = make_model_weights(small_spec(layers));
    RefSequence ref(w, cache_of(DType::bf16));
    ref.extend(test::random_tokens(6, 16, 50), 16);
    for (int32_t l = 0; l < static_cast<int32_t>(layers.size()); ++l) {
      double ss = 0.0;
      for (int32_t pos = 0; pos < 16; ++pos)
        for (int32_t j = 0; j < kQDim; ++j) {
          ASSERT_TRUE(std::isfinite(ref.attn_out(pos, l)[j]));
          ss += ref.attn_out(pos, l)[j] * ref.attn_out(pos, l)[j];
        }
      EXPECT_GT(ss, 1.0) << "layer " << l;
    }
    for (double x : ref.logits(15)) ASSERT_TRUE(std::isfinite(x));
  }
}

}  // namespace
}  // namespace kv
