#include "reference/ref_sequence.h"

#include <cmath>

#include "kernels/model_math.cuh"

namespace kv {
namespace {

void rms_norm(const std::vector<double>& h, std::vector<double>& x) {
  double ss = 0.0;
  for (double v : h) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(h.size()) + kRmsNormEps);
  for (size_t i = 0; i < h.size(); ++i) x[i] = h[i] * inv;
}

// y = W x (+ b), W row-major [rows][cols].
void matvec(const std::vector<float>& w, const std::vector<double>& x, double* y, int32_t rows,
            const float* bias = nullptr) {
  const size_t cols = x.size();
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = w.data() + static_cast<size_t>(r) * cols;
    double s = bias ? bias[r] : 0.0;
    for (size_t c = 0; c < cols; ++c) s += static_cast<double>(row[c]) * x[c];
    y[r] = s;
  }
}

}  // namespace

RefSequence::RefSequence(const ModelWeights& weights, DType cache_dtype)
    : w_(weights),
      cache_dtype_(cache_dtype),
      q_dim_(weights.spec.num_q_heads * weights.spec.head_dim),
      kv_dim_(weights.spec.num_kv_heads * weights.spec.head_dim),
      hidden_(weights.spec.hidden_size),
      k_(weights.layers.size()),
      v_(weights.layers.size()),
      out_(weights.layers.size()) {}

void RefSequence::extend(const std::vector<int32_t>& tokens, int32_t n) {
  while (length_ < n) {
    compute_position(length_, tokens.at(static_cast<size_t>(length_)));
    ++length_;
  }
}

const double* RefSequence::attn_out(int32_t pos, int32_t layer) const {
  return out_[layer].data() + static_cast<size_t>(pos) * q_dim_;
}

std::vector<double> RefSequence::logits(int32_t pos) const {
  std::vector<double> h(final_hidden_.begin() + static_cast<size_t>(pos) * hidden_,
                        final_hidden_.begin() + static_cast<size_t>(pos + 1) * hidden_);
  std::vector<double> x(hidden_);
  rms_norm(h, x);
  std::vector<double> out(w_.spec.vocab_size);
  matvec(w_.lm_head, x, out.data(), w_.spec.vocab_size);
  return out;
}

void RefSequence::compute_position(int32_t pos, int32_t token) {
  const ModelSpec& s = w_.spec;
  const int32_t D = s.head_dim, group = s.num_q_heads / s.num_kv_heads;
  std::vector<double> h(hidden_), x(hidden_), q(q_dim_), kv(kv_dim_), o(q_dim_), scores(pos + 1);
  for (int32_t i = 0; i < hidden_; ++i)
    h[i] = static_cast<double>(w_.embed[static_cast<size_t>(token) * hidden_ + i]) +
           position_code<double>(pos, i, hidden_);
  const float qscale = w_.quant_scale();

  for (size_t l = 0; l < w_.layers.size(); ++l) {
    const LayerWeights& lw = w_.layers[l];
    rms_norm(h, x);
    matvec(lw.wq, x, q.data(), q_dim_);
    auto& K = k_[l];
    auto& V = v_[l];
    matvec(lw.wk, x, kv.data(), kv_dim_);
    for (double e : kv) K.push_back(round_through(static_cast<float>(e), cache_dtype_));
    matvec(lw.wv, x, kv.data(), kv_dim_, lw.bv.data());
    for (double e : kv) V.push_back(round_through(static_cast<float>(e), cache_dtype_));

    for (int32_t hq = 0; hq < s.num_q_heads; ++hq) {
      const int32_t hk = hq / group;
      const double* qh = q.data() + hq * D;
      double m = -INFINITY;
      for (int32_t t = 0; t <= pos; ++t) {
        const float* kt = K.data() + static_cast<size_t>(t) * kv_dim_ + hk * D;
        double dot = 0.0;
        for (int32_t d = 0; d < D; ++d) dot += qh[d] * kt[d];
        scores[t] = dot * static_cast<double>(w_.softmax_scale);
        m = std::max(m, scores[t]);
      }
      double denom = 0.0;
      double* oh = o.data() + hq * D;
      for (int32_t d = 0; d < D; ++d) oh[d] = 0.0;
      for (int32_t t = 0; t <= pos; ++t) {
        const double p = std::exp(scores[t] - m);
        denom += p;
        const float* vt = V.data() + static_cast<size_t>(t) * kv_dim_ + hk * D;
        for (int32_t d = 0; d < D; ++d) oh[d] += p * vt[d];
      }
      for (int32_t d = 0; d < D; ++d) oh[d] /= denom;
    }
    out_[l].insert(out_[l].end(), o.begin(), o.end());

    // The batch-wide fp8 quantisation, as the op does it in float with the batch-invariant scale.
    std::vector<double> oq(q_dim_);
    for (int32_t j = 0; j < q_dim_; ++j) {
      const float xq = static_cast<float>(o[j]) / qscale;
      oq[j] = static_cast<double>(fp8_e4m3_to_f32(f32_to_fp8_e4m3(xq)) * qscale);
    }
    std::vector<double> delta(hidden_);
    matvec(lw.wo, oq, delta.data(), hidden_);
    for (int32_t i = 0; i < hidden_; ++i) h[i] += delta[i];
  }
  final_hidden_.insert(final_hidden_.end(), h.begin(), h.end());
}

}  // namespace kv
