// ref_attention.cpp — reference of an attention layer and the per-kind factory.
#include "reference/host/ref_layers.h"
#include "reference/host/ref_math.h"

namespace kv {

RefAttention::RefAttention(const ModelWeights& w, size_t layer, const CacheSpec& cache)
    : w_(w),
      lw_(w.layers.at(layer)),
      dtype_(cache.dtype),
      k_scale_(ref::cache_scale(cache, cache.k_scale)),
      v_scale_(ref::cache_scale(cache, cache.v_scale)),
      kv_dim_(static_cast<size_t>(w.spec.num_kv_heads) * w.spec.head_dim) {}

void RefAttention::step(const std::vector<double>& x, double* o) {
  const ModelSpec& s = w_.spec;
  const int32_t D = s.head_dim, group = s.num_q_heads / s.num_kv_heads;
  const std::vector<double> q = ref::matvec(lw_.wq, x);
  for (double e : ref::matvec(lw_.wk, x))
    k_.push_back(round_through_scaled(static_cast<float>(e), dtype_, k_scale_));
  for (double e : ref::matvec(lw_.wv, x, lw_.bv))
    v_.push_back(round_through_scaled(static_cast<float>(e), dtype_, v_scale_));

  const int32_t n = static_cast<int32_t>(k_.size() / kv_dim_);
  std::vector<double> scores(static_cast<size_t>(n));
  for (int32_t hq = 0; hq < s.num_q_heads; ++hq) {
    const size_t head_off = static_cast<size_t>(hq / group) * D;
    const double* qh = q.data() + static_cast<size_t>(hq) * D;
    for (int32_t t = 0; t < n; ++t) {
      const float* kt = k_.data() + t * kv_dim_ + head_off;
      scores[t] = ref::dot(qh, kt, static_cast<size_t>(D)) * static_cast<double>(w_.softmax_scale);
    }
    ref::attend(
        scores, n, [&](int32_t t) { return v_.data() + t * kv_dim_ + head_off; }, D,
        o + static_cast<size_t>(hq) * D);
  }
}

std::unique_ptr<RefLayer> make_ref_layer(const ModelWeights& w, size_t layer,
                                         const CacheSpec& cache) {
  switch (w.layers.at(layer).kind) {
    case LayerKind::attention: return std::make_unique<RefAttention>(w, layer, cache);
    case LayerKind::mla: return std::make_unique<RefMla>(w, layer, cache);
    case LayerKind::linear: break;
  }
  return std::make_unique<RefLinear>(w, layer);
}

}  // namespace kv
