#include "engine/model_weights.h"

#include <algorithm>
#include <cmath>

#include "engine/rng.h"

namespace kv {
namespace {

std::vector<float> gaussian(Rng& rng, size_t n, double stddev) {
  std::vector<float> w(n);
  for (auto& x : w) x = static_cast<float>(rng.normal() * stddev);
  return w;
}

}  // namespace

ModelWeights make_model_weights(const ModelSpec& spec) {
  ModelWeights m;
  m.spec = spec;
  const int32_t H = spec.hidden_size, D = spec.head_dim;
  const int32_t q_dim = spec.num_q_heads * D, kv_dim = spec.num_kv_heads * D;
  const double inv_sqrt_h = 1.0 / std::sqrt(static_cast<double>(H));
  Rng rng(spec.weight_seed);

  m.embed = gaussian(rng, static_cast<size_t>(spec.vocab_size) * H, 1.0);
  // Queries a little larger than keys, so that attention is peaked enough for a misplaced key to
  // matter, yet spread over many tokens.
  float max_v_row_norm = 0.0f;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    LayerWeights w;
    w.wq = gaussian(rng, static_cast<size_t>(q_dim) * H, 1.5 * inv_sqrt_h);
    w.wk = gaussian(rng, static_cast<size_t>(kv_dim) * H, inv_sqrt_h);
    w.wv = gaussian(rng, static_cast<size_t>(kv_dim) * H, inv_sqrt_h);
    w.bv.assign(kv_dim, 0.0f);
    std::fill(w.wv.begin(), w.wv.begin() + H, 0.0f);  // feature 0 of KV head 0: the sentinel
    for (int32_t j = 0; j < kv_dim; ++j) {
      double s = 0.0;
      for (int32_t i = 0; i < H; ++i) s += static_cast<double>(w.wv[j * H + i]) * w.wv[j * H + i];
      max_v_row_norm = std::max(max_v_row_norm, static_cast<float>(std::sqrt(s)));
    }
    w.wo = gaussian(rng, static_cast<size_t>(H) * q_dim, 0.5 / std::sqrt(static_cast<double>(q_dim)));
    m.layers.push_back(std::move(w));
  }
  m.lm_head = gaussian(rng, static_cast<size_t>(spec.vocab_size) * H, 2.0 * inv_sqrt_h);

  // Largest |v| any input can give (Cauchy-Schwarz with ||x|| <= sqrt(H)), with a margin for the
  // rounding of V into the cache dtype, rounded up to a power of two (exact in every dtype).
  const double bound = std::max(1e-3, 1.01 * max_v_row_norm * std::sqrt(static_cast<double>(H)));
  m.sentinel = static_cast<float>(std::exp2(std::ceil(std::log2(bound))));
  for (auto& w : m.layers) w.bv[0] = m.sentinel;
  m.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  return m;
}

}  // namespace kv
