// Tests of the float64 reference: the properties the checks rely on.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_weights.h"
#include "reference/ref_sequence.h"

namespace kv {
namespace {

ModelSpec small_model(int32_t q_heads, int32_t kv_heads) {
  ModelSpec m;
  m.layers = {LayerKind::attention, LayerKind::attention};
  m.num_q_heads = q_heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = 8;
  m.hidden_size = 32;
  m.vocab_size = 50;
  m.weight_seed = 3;
  return m;
}

TEST(RefSequence, SentinelFeatureHoldsTheBatchInvariantAmax) {
  const ModelWeights w = make_model_weights(small_model(4, 2));
  RefSequence ref(w, DType::bf16);
  std::vector<int32_t> tokens = {3, 14, 15, 9, 26, 5, 35, 8};
  ref.extend(tokens, 8);
  const int32_t q_dim = 4 * 8;
  for (int32_t pos = 0; pos < 8; ++pos) {
    for (int32_t l = 0; l < 2; ++l) {
      const double* o = ref.attn_out(pos, l);
      // Heads 0 and 1 read KV head 0, whose feature 0 is the constant sentinel.
      EXPECT_NEAR(o[0], w.sentinel, 1e-9 * w.sentinel);
      EXPECT_NEAR(o[8], w.sentinel, 1e-9 * w.sentinel);
      for (int32_t j = 0; j < q_dim; ++j) EXPECT_LE(std::fabs(o[j]), w.sentinel * (1 + 1e-12));
    }
  }
}

TEST(RefSequence, FirstPositionAttendsOnlyToItself) {
  // At position 0 softmax has one key: the output is that token's V row, rounded like the cache.
  const ModelWeights w = make_model_weights(small_model(2, 2));
  RefSequence a(w, DType::f32), b(w, DType::bf16);
  a.extend({7}, 1);
  b.extend({7}, 1);
  const double* oa = a.attn_out(0, 0);
  const double* ob = b.attn_out(0, 0);
  for (int32_t j = 0; j < 16; ++j) {
    EXPECT_EQ(static_cast<double>(round_through(static_cast<float>(oa[j]), DType::bf16)), ob[j]) << j;
  }
}

TEST(RefSequence, ExtendIsIncrementalAndDeterministic) {
  const ModelWeights w = make_model_weights(small_model(4, 1));
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6};
  RefSequence whole(w, DType::f16), steps(w, DType::f16);
  whole.extend(tokens, 6);
  for (int32_t n = 1; n <= 6; ++n) steps.extend(tokens, n);
  EXPECT_EQ(steps.length(), 6);
  for (int32_t pos = 0; pos < 6; ++pos)
    for (int32_t j = 0; j < 32; ++j) EXPECT_EQ(whole.attn_out(pos, 1)[j], steps.attn_out(pos, 1)[j]);
  EXPECT_EQ(whole.logits(5), steps.logits(5));
}

TEST(RefSequence, HistoryChangesLaterOutputs) {
  const ModelWeights w = make_model_weights(small_model(2, 1));
  RefSequence a(w, DType::f32), b(w, DType::f32);
  a.extend({1, 2, 3}, 3);
  b.extend({1, 9, 3}, 3);
  double diff = 0.0;
  for (int32_t j = 0; j < 16; ++j) diff += std::fabs(a.attn_out(2, 0)[j] - b.attn_out(2, 0)[j]);
  EXPECT_GT(diff, 1e-3);
  EXPECT_EQ(a.attn_out(0, 0)[3], b.attn_out(0, 0)[3]);  // position 0 does not see the future
}

}  // namespace
}  // namespace kv
