#include "reference/host/ref_sequence.h"

#include <cmath>

#include "kernels/model_math.cuh"
#include "reference/host/ref_math.h"

namespace kv {
namespace {

double quant_fp8(double v, float scale) {
  return round_through_scaled(static_cast<float>(v), DType::fp8_e4m3, scale);
}

// The engine's value when it is the other code of a near-tie (see kFp8TieWindow), else ours.
double settle_tie(double exact, double ours, const float* engine, size_t j, float scale) {
  if (engine == nullptr) return ours;
  const double theirs = engine[j];
  if (!(theirs != ours) || !std::isfinite(theirs)) return ours;
  if (quant_fp8(theirs, scale) != theirs) return ours;  // not an fp8 code at this scale
  const double mid = 0.5 * (ours + theirs);
  return std::fabs(exact - mid) <= kFp8TieWindow * std::fabs(theirs - ours) ? theirs : ours;
}

}  // namespace

RefSequence::RefSequence(const ModelWeights& weights, const CacheSpec& cache)
    : w_(weights),
      q_dim_(static_cast<size_t>(weights.spec.num_q_heads) * weights.spec.head_dim),
      hidden_(static_cast<size_t>(weights.spec.hidden_size)),
      out_(weights.layers.size()) {
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    layers_.push_back(make_ref_layer(weights, l, cache));
    const bool quantised = weights.layers[l].kind != LayerKind::linear;
    quant_scale_.push_back(quantised ? weights.quant_scale(l, cache) : 0.0f);
  }
}

void RefSequence::extend(const std::vector<int32_t>& tokens, int32_t n, const QuantHint& hint) {
  while (length_ < n) {
    compute_position(length_, tokens.at(static_cast<size_t>(length_)), hint);
    ++length_;
  }
}

const double* RefSequence::attn_out(int32_t pos, int32_t layer) const {
  return out_.at(static_cast<size_t>(layer)).data() + static_cast<size_t>(pos) * q_dim_;
}

std::vector<double> RefSequence::logits(int32_t pos) const {
  const auto first = final_hidden_.begin() + static_cast<std::ptrdiff_t>(pos * hidden_);
  const std::vector<double> h(first, first + static_cast<std::ptrdiff_t>(hidden_));
  std::vector<double> x(hidden_);
  ref::rms_norm(h, x);
  return ref::matvec(w_.lm_head, x);
}

void RefSequence::compute_position(int32_t pos, int32_t token, const QuantHint& hint) {
  const int32_t hid = static_cast<int32_t>(hidden_);
  std::vector<double> h(hidden_), x(hidden_), o(q_dim_), o_in(q_dim_);
  for (int32_t i = 0; i < hid; ++i)
    h[i] = static_cast<double>(w_.embed[static_cast<size_t>(token) * hidden_ + i]) +
           position_code<double>(pos, i, hid);

  for (size_t l = 0; l < layers_.size(); ++l) {
    ref::rms_norm(h, x);
    layers_[l]->step(x, o.data());
    out_[l].insert(out_[l].end(), o.begin(), o.end());
    // The batch-wide fp8 quantisation, as the op does it in float with the batch-invariant scale;
    // linear layers skip it.
    const bool quantised = w_.layers[l].kind != LayerKind::linear;
    const float* engine = quantised && hint ? hint(pos, static_cast<int32_t>(l)) : nullptr;
    for (size_t j = 0; j < q_dim_; ++j)
      o_in[j] = quantised ? settle_tie(o[j], quant_fp8(o[j], quant_scale_[l]), engine, j,
                                       quant_scale_[l])
                          : o[j];
    const std::vector<double> delta = ref::matvec(w_.layers[l].wo, o_in);
    for (size_t i = 0; i < hidden_; ++i) h[i] += delta[i];
  }
  final_hidden_.insert(final_hidden_.end(), h.begin(), h.end());
}

}  // namespace kv
