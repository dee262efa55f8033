// model_weights.h — the synthetic transformer's fixed random weights, shared by the engine (which
// uploads them to the device) and the float64 reference (which reads them on the host).
//
// Per layer: x = rms_norm(h); q = Wq x; k = Wk x; v = Wv x + bv; o = attention(q, K, V);
// h += Wo · quant_fp8(o). After the last layer: logits = Wlm · rms_norm(h); next token = argmax.
//
// Why the V bias: the batch-wide fp8 quantisation takes amax over the rows of the batch, which
// would make every row's rounding depend on which other requests share the step — a legitimate
// difference the reference could not reproduce per request. Feature 0 of KV head 0 therefore has
// no weights and a constant bias `sentinel`, a power of two at or above the largest |v| that any
// input can produce (|v_j| <= ||Wv_j|| * ||x|| and ||x|| = sqrt(hidden) after rms_norm). Every
// real attention output row then holds exactly `sentinel` there (a convex combination of equal
// values) and no element above it, so amax over real rows is `sentinel` in every batch: the
// correct op is batch invariant, and only rows that are not real (padded, never written) can
// change it — which is the seed-001 bug class.
#pragma once

#include <cstdint>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

struct LayerWeights {
  std::vector<float> wq;  // [num_q_heads * head_dim][hidden]
  std::vector<float> wk;  // [num_kv_heads * head_dim][hidden]
  std::vector<float> wv;  // [num_kv_heads * head_dim][hidden]
  std::vector<float> bv;  // [num_kv_heads * head_dim]
  std::vector<float> wo;  // [hidden][num_q_heads * head_dim]
};

struct ModelWeights {
  ModelSpec spec;
  std::vector<float> embed;  // [vocab][hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> lm_head;  // [vocab][hidden]
  float sentinel = 0.0f;       // see above
  float softmax_scale = 0.0f;  // 1 / sqrt(head_dim)

  float quant_scale() const { return sentinel / 448.0f; }  // the correct fp8 per-tensor scale
};

ModelWeights make_model_weights(const ModelSpec& spec);

inline constexpr float kRmsNormEps = 1e-6f;

}  // namespace kv
