// ref_sequence.h — the float64 reference for one request.
//
// It recomputes the synthetic model over the request's own logical token sequence, position by
// position, never touching the paged cache, block tables, batches or graphs. K and V are rounded
// through the cache dtype (what the cache can hold), and the batch-wide fp8 quantisation is
// applied with the scale the model guarantees for every correct batch (model_weights.h), in
// float like the op. Everything else is double. The engine's attention outputs are compared to
// attn_out(); its sampled tokens to logits().
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model_weights.h"

namespace kv {

class RefSequence {
 public:
  RefSequence(const ModelWeights& weights, DType cache_dtype);

  // Compute positions [length(), n) from `tokens` (the request's prompt + generated tokens so
  // far, at least n long). Positions already computed are kept: a request's history only grows.
  void extend(const std::vector<int32_t>& tokens, int32_t n);
  int32_t length() const { return length_; }

  // Attention output of `layer` at `pos` (before the fp8 quantisation): num_q_heads * head_dim.
  const double* attn_out(int32_t pos, int32_t layer) const;
  // Logits after the last layer at `pos` (the distribution of the token at pos + 1).
  std::vector<double> logits(int32_t pos) const;

 private:
  void compute_position(int32_t pos, int32_t token);

  const ModelWeights& w_;
  DType cache_dtype_;
  int32_t length_ = 0;
  int32_t q_dim_, kv_dim_, hidden_;
  std::vector<std::vector<float>> k_, v_;     // per layer [pos][kv_dim], rounded through the dtype
  std::vector<std::vector<double>> out_;      // per layer [pos][q_dim]
  std::vector<double> final_hidden_;          // [pos][hidden]
};

}  // namespace kv
