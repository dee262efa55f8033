// ref_math.h — the float64 building blocks of the reference: rms_norm, matrix-vector products
// over the model's float weights, and softmax attention over one head's rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/model_weights.h"
#include "reference/host/ref_sums.h"

namespace kv::ref {

inline void rms_norm(const std::vector<double>& h, std::vector<double>& x) {
  const double ss = squares(h.data(), h.size());
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(h.size()) + kRmsNormEps);
  for (size_t i = 0; i < h.size(); ++i) x[i] = h[i] * inv;
}

// y[r] = W[r] . x (+ b[r]) for r in [0, rows); W row-major [rows][cols].
inline void matvec(const float* w, const double* x, size_t cols, double* y, size_t rows,
                   const float* bias = nullptr) {
  for (size_t r = 0; r < rows; ++r) {
    const double s = dot(w + r * cols, x, cols);
    y[r] = bias ? static_cast<double>(bias[r]) + s : s;
  }
}

inline std::vector<double> matvec(const std::vector<float>& w, const std::vector<double>& x,
                                  const std::vector<float>& bias = {}) {
  std::vector<double> y(w.size() / x.size());
  matvec(w.data(), x.data(), x.size(), y.data(), y.size(), bias.empty() ? nullptr : bias.data());
  return y;
}

// The dequantisation scale a cache of this dtype applies: k_scale / v_scale are fp8's only.
inline float cache_scale(const CacheSpec& c, float scale) {
  return c.dtype == DType::fp8_e4m3 ? scale : 1.0f;
}

// out[0, dim) = softmax(scores[0, n)) . rows, row(t) giving value row t (float or double).
// Written as v_a + sum_t p_t (v_t - v_a) / sum_t p_t around the row a of the largest score: the
// same average in exact arithmetic, but a feature equal in every row — the sentinel — comes out
// as exactly that value, which is what makes it the exact amax of the fp8 op.
template <class Row>
void attend(const std::vector<double>& scores, int32_t n, Row row, int32_t dim, double* out) {
  const int32_t a =
      static_cast<int32_t>(std::max_element(scores.begin(), scores.begin() + n) - scores.begin());
  const auto* va = row(a);
  std::vector<double> acc(static_cast<size_t>(dim), 0.0);
  double denom = 0.0;
  for (int32_t t = 0; t < n; ++t) {
    const double p = std::exp(scores[t] - scores[a]);
    denom += p;
    const auto* vt = row(t);
    for (int32_t d = 0; d < dim; ++d) acc[d] += p * (static_cast<double>(vt[d]) - va[d]);
  }
  for (int32_t d = 0; d < dim; ++d) out[d] = static_cast<double>(va[d]) + acc[d] / denom;
}

}  // namespace kv::ref
