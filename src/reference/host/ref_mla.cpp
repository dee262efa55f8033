// ref_mla.cpp — reference of an MLA layer, non-absorbed. The engine runs the absorbed form
// (q_lat = Wq_abs x against the latent rows, then Wuv per head); the two agree up to the rounding
// of the folded weights, which the reference tests check.
#include "reference/host/ref_layers.h"
#include "reference/host/ref_math.h"

namespace kv {

RefMla::RefMla(const ModelWeights& w, size_t layer, const CacheSpec& cache)
    : w_(w),
      lw_(w.layers.at(layer)),
      dtype_(cache.dtype),
      k_scale_(ref::cache_scale(cache, cache.k_scale)),
      heads_(static_cast<size_t>(w.spec.num_q_heads)),
      dim_(static_cast<size_t>(w.spec.head_dim)),
      rank_(static_cast<size_t>(w.spec.kv_lora_rank)),
      rope_(static_cast<size_t>(w.spec.qk_rope_dim)),
      lat_dim_(rank_ + rope_),
      scores_(heads_) {}

void RefMla::step(const std::vector<double>& x, double* o) {
  const size_t H = heads_, D = dim_, R = rank_, P = rope_;
  const std::vector<double> lat = ref::matvec(lw_.wdkv, x, lw_.bdkv);
  std::vector<double> c(lat_dim_);  // the rounded latent row, c then kr
  for (size_t i = 0; i < lat_dim_; ++i) {
    lat_.push_back(round_through_scaled(static_cast<float>(lat[i]), dtype_, k_scale_));
    c[i] = lat_.back();
  }
  const size_t n = lat_.size() / lat_dim_;
  kc_.resize(n * H * D);
  v_.resize(n * H * D);
  double* kc_t = &kc_[(n - 1) * H * D];
  double* v_t = &v_[(n - 1) * H * D];
  for (size_t h = 0; h < H; ++h) {
    ref::matvec(&lw_.wuk[h * D * R], c.data(), R, kc_t + h * D, D);
    ref::matvec(&lw_.wuv[h * D * R], c.data(), R, v_t + h * D, D);
  }

  const std::vector<double> q_nope = ref::matvec(lw_.wqn, x);
  const std::vector<double> q_rope = ref::matvec(lw_.wqr, x);
  const double scale = static_cast<double>(w_.mla_softmax_scale);
  for (size_t h = 0; h < H; ++h) {
    std::vector<double>& sc = scores_[h];
    sc.assign(n, 0.0);
    for (size_t t = 0; t < n; ++t) {
      const double* k = &kc_[(t * H + h) * D];
      const float* kr = latent(static_cast<int32_t>(t)) + R;
      sc[t] = (ref::dot(&q_nope[h * D], k, D) + ref::dot(&q_rope[h * P], kr, P)) * scale;
    }
    ref::attend(
        sc, static_cast<int32_t>(n), [&](int32_t t) { return &v_[(t * H + h) * D]; },
        static_cast<int32_t>(D), o + h * D);
  }
}

}  // namespace kv
