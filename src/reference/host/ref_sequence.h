// ref_sequence.h — the float64 reference for one request.
//
// It recomputes the synthetic model over the request's own logical token sequence, position by
// position, never touching the paged cache, block tables, batches or graphs. Each layer's mixer is
// a RefLayer (ref_layers.h) that rounds what the cache stores the way the cache dtype and scales
// do; after attention and mla layers the batch-wide fp8 quantisation is applied with the scale
// the model guarantees for every correct batch (ModelWeights::quant_scale), in float like the op;
// linear layers skip it. Everything else is double. The engine's attention outputs are compared
// to attn_out(); its sampled tokens to logits().
//
// Teacher forcing at the fp8 op: the op's rounding is discontinuous, so where an attention output
// sits within float noise of the midpoint between two fp8 codes, a correct engine may land on
// either side — and the other side then feeds every later layer, and (through a linear layer's
// state) every later position. Given the engine's quantised row (a QuantHint), the reference
// adopts the engine's value for an element exactly when it is the neighbouring code and the
// reference's own unrounded value lies within kFp8TieWindow of a step of the midpoint. Anything
// else the engine produced is ignored; its attention outputs are still checked on their own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/model_weights.h"
#include "reference/host/ref_layers.h"

namespace kv {

// The engine's quant_fp8 output row (num_q_heads * head_dim floats) of `layer` at `pos`, or
// nullptr where it is not known.
using QuantHint = std::function<const float*(int32_t pos, int32_t layer)>;

// Share of one fp8 step around the midpoint of two codes where either rounding is accepted. The
// engine's attention outputs differ from the reference's by ~1e-5 relative; a step is 2^-4..2^-3
// relative: 1% of a step is ~50x that difference, and still rejects any value not at a tie.
inline constexpr double kFp8TieWindow = 0.01;

class RefSequence {
 public:
  RefSequence(const ModelWeights& weights, const CacheSpec& cache);

  // Compute positions [length(), n) from `tokens` (the request's prompt + generated tokens so
  // far, at least n long). Positions already computed are kept: a request's history only grows.
  void extend(const std::vector<int32_t>& tokens, int32_t n, const QuantHint& hint = {});
  int32_t length() const { return length_; }

  // Attention output of `layer` at `pos` (before the fp8 quantisation): num_q_heads * head_dim.
  const double* attn_out(int32_t pos, int32_t layer) const;
  // Logits after the last layer at `pos` (the distribution of the token at pos + 1).
  std::vector<double> logits(int32_t pos) const;

 private:
  void compute_position(int32_t pos, int32_t token, const QuantHint& hint);

  const ModelWeights& w_;
  int32_t length_ = 0;
  size_t q_dim_, hidden_;
  std::vector<std::unique_ptr<RefLayer>> layers_;
  std::vector<float> quant_scale_;        // per layer; 0 for linear layers (no fp8 op)
  std::vector<std::vector<double>> out_;  // per layer [pos][q_dim]
  std::vector<double> final_hidden_;      // [pos][hidden]
};

}  // namespace kv
