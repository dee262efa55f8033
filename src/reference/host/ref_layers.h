// ref_layers.h — the float64 reference of one layer's mixer, per layer kind.
//
// A layer object holds what the layer remembers of one request — its K/V rows, latent rows or
// recurrent state — and step() appends one position: it reads x = rms_norm(h) of the new token
// and writes o, the layer's attention output (num_q_heads * head_dim), per model_weights.h.
// Values are double except where the engine's storage rounds them: what the cache holds is
// rounded through its dtype and scale, exactly as write_kv stores it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/model_weights.h"

namespace kv {

class RefLayer {
 public:
  virtual ~RefLayer() = default;
  virtual void step(const std::vector<double>& x, double* o) = 0;
};

// GQA attention over K and V rounded like the cache (K with k_scale, V with v_scale).
class RefAttention : public RefLayer {
 public:
  RefAttention(const ModelWeights& w, size_t layer, const CacheSpec& cache);
  void step(const std::vector<double>& x, double* o) override;

 private:
  const ModelWeights& w_;
  const LayerWeights& lw_;
  DType dtype_;
  float k_scale_, v_scale_;
  size_t kv_dim_;
  std::vector<float> k_, v_;  // [t][kv_dim], as read back from the cache
};

// MLA in its non-absorbed form: the latent row is what the cache holds (rounded with k_scale,
// being the cache's K), and each head's keys and values are expanded from it in double.
class RefMla : public RefLayer {
 public:
  RefMla(const ModelWeights& w, size_t layer, const CacheSpec& cache);
  void step(const std::vector<double>& x, double* o) override;

  // The latent row of position t as read back from the cache: R + P values.
  const float* latent(int32_t t) const { return &lat_[static_cast<size_t>(t) * lat_dim_]; }
  // Scaled scores of the last step: [num_q_heads][positions so far].
  const std::vector<std::vector<double>>& last_scores() const { return scores_; }

 private:
  const ModelWeights& w_;
  const LayerWeights& lw_;
  DType dtype_;
  float k_scale_;
  size_t heads_, dim_, rank_, rope_, lat_dim_;
  std::vector<float> lat_;  // [t][R + P]
  std::vector<double> kc_;  // [t][H][D]: Wuk_h c_t
  std::vector<double> v_;   // [t][H][D]: Wuv_h c_t
  std::vector<std::vector<double>> scores_;
};

// Gated linear attention with its recurrent state. Nothing is rounded: the engine keeps the state
// in float32 and computes from float activations, so its float accumulation is the only
// difference from this reference.
class RefLinear : public RefLayer {
 public:
  RefLinear(const ModelWeights& w, size_t layer);
  void step(const std::vector<double>& x, double* o) override;

 private:
  const ModelWeights& w_;
  const LayerWeights& lw_;
  size_t heads_, dim_;
  std::vector<double> state_;  // [H][D key][D value], zero before position 0
};

std::unique_ptr<RefLayer> make_ref_layer(const ModelWeights& w, size_t layer,
                                         const CacheSpec& cache);

}  // namespace kv
