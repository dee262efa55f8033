// ref_linear.cpp — reference of a gated linear-attention layer (LinearAttnArgs in op_args.cuh).
#include <cmath>

#include "reference/host/ref_layers.h"
#include "reference/host/ref_math.h"

namespace kv {

RefLinear::RefLinear(const ModelWeights& w, size_t layer)
    : w_(w),
      lw_(w.layers.at(layer)),
      heads_(static_cast<size_t>(w.spec.num_q_heads)),
      dim_(static_cast<size_t>(w.spec.head_dim)),
      state_(heads_ * dim_ * dim_, 0.0) {}

void RefLinear::step(const std::vector<double>& x, double* o) {
  const size_t D = dim_;
  const std::vector<double> q = ref::matvec(lw_.wq, x);
  const std::vector<double> k = ref::matvec(lw_.wk, x);
  const std::vector<double> v = ref::matvec(lw_.wv, x);
  const std::vector<double> gate = ref::matvec(lw_.wg, x, lw_.bg);
  // The scale the engine passes to the op: 1 / sqrt(D) as a float.
  const double scale = static_cast<double>(w_.softmax_scale);
  for (size_t h = 0; h < heads_; ++h) {
    const double g = 1.0 / (1.0 + std::exp(-gate[h]));
    double* S = &state_[h * D * D];
    const double* qh = &q[h * D];
    const double* kh = &k[h * D];
    const double* vh = &v[h * D];
    for (size_t i = 0; i < D; ++i)
      for (size_t j = 0; j < D; ++j) S[i * D + j] = g * S[i * D + j] + kh[i] * vh[j];
    for (size_t j = 0; j < D; ++j) {
      double s = 0.0;
      for (size_t i = 0; i < D; ++i) s += qh[i] * S[i * D + j];
      o[h * D + j] = scale * s;
    }
  }
}

}  // namespace kv
