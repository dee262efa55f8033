#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "util/rng.h"

namespace kv {
namespace {

std::vector<float> gaussian(Rng& rng, size_t n, double stddev) {
  std::vector<float> w(n);
  for (auto& x : w) x = static_cast<float>(rng.normal() * stddev);
  return w;
}

double row_norm(const float* row, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(row[i]) * row[i];
  return std::sqrt(s);
}

// A layer's weights and the largest |o| element any input can give it (the sentinel excluded).
struct BuiltLayer {
  LayerWeights w;
  double o_bound = 0.0;
};

// Queries a little larger than keys, so that attention is peaked enough for a misplaced key to
// matter, yet spread over many tokens. The draw order (wq, wk, wv, wo) is what pins the weights
// of existing attention-only scenarios.
BuiltLayer make_attention(Rng& rng, const ModelSpec& s) {
  const size_t hid = static_cast<size_t>(s.hidden_size);
  const size_t q_dim = static_cast<size_t>(s.num_q_heads) * s.head_dim;
  const size_t kv_dim = static_cast<size_t>(s.num_kv_heads) * s.head_dim;
  const double inv_sqrt_h = 1.0 / std::sqrt(static_cast<double>(hid));
  BuiltLayer b;
  LayerWeights& w = b.w;
  w.kind = LayerKind::attention;
  w.wq = gaussian(rng, q_dim * hid, 1.5 * inv_sqrt_h);
  w.wk = gaussian(rng, kv_dim * hid, inv_sqrt_h);
  w.wv = gaussian(rng, kv_dim * hid, inv_sqrt_h);
  w.bv.assign(kv_dim, 0.0f);  // bv[0] = sentinel, set once the model's sentinel is known
  std::fill(w.wv.begin(), w.wv.begin() + static_cast<std::ptrdiff_t>(hid), 0.0f);
  w.wo = gaussian(rng, hid * q_dim, 0.5 / std::sqrt(static_cast<double>(q_dim)));
  // o is a convex combination of V rows, and |v_j| <= ||Wv row j|| * ||x|| (Cauchy-Schwarz).
  double max_row = 0.0;
  for (size_t j = 1; j < kv_dim; ++j) max_row = std::max(max_row, row_norm(&w.wv[j * hid], hid));
  b.o_bound = max_row * std::sqrt(static_cast<double>(hid));
  return b;
}

// An upper bound of the largest eigenvalue of A^T A, A = rows [first, last) of w ([*][cols]):
// ||A||_F^2, or, when the Gram matrix of A's smaller side is cheap to form, the Gershgorin bound
// of it (its largest absolute row sum; A^T A and A A^T share their nonzero eigenvalues). Both are
// rigorous; Gershgorin is several times tighter for a wide random A, and a tighter bound keeps the
// sentinel, and with it the norm of head 0 that the drift check divides by, close to real values.
double gram_eigen_bound(const std::vector<float>& w, size_t first, size_t last, size_t cols) {
  const size_t rows = last - first;
  double frob = 0.0;
  for (size_t i = first * cols; i < last * cols; ++i) frob += static_cast<double>(w[i]) * w[i];
  const size_t n = std::min(rows, cols), k = std::max(rows, cols);
  if (static_cast<double>(n) * n * k > 1e8) return frob;  // seconds of work for a tighter bound
  auto a = [&](size_t i, size_t j) {  // [n][k]: A if it has no more rows than columns, else A^T
    return static_cast<double>(rows <= cols ? w[(first + i) * cols + j]
                                            : w[(first + j) * cols + i]);
  };
  double gersh = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (size_t j = 0; j < n; ++j) {
      double g = 0.0;
      for (size_t t = 0; t < k; ++t) g += a(i, t) * a(j, t);
      s += std::fabs(g);
    }
    gersh = std::max(gersh, s);
  }
  return std::min(frob, gersh);
}

// Scales: latent features ~ N(0, 1) (keys ~1/sqrt(hidden) per feature), Wuk and Wuv 1/sqrt(R) so
// that k and v entries are O(1), queries 1.5/sqrt(hidden) as in attention: scores are as peaked
// as an attention layer's. Column 0 of Wuk and Wuv is zero (c[0] is a constant, `latent`), except
// for the sentinel entry of Wuv set later.
BuiltLayer make_mla(Rng& rng, const ModelSpec& s, float latent) {
  const size_t hid = static_cast<size_t>(s.hidden_size), H = static_cast<size_t>(s.num_q_heads);
  const size_t D = static_cast<size_t>(s.head_dim), R = static_cast<size_t>(s.kv_lora_rank);
  const size_t P = static_cast<size_t>(s.qk_rope_dim);
  const double inv_sqrt_h = 1.0 / std::sqrt(static_cast<double>(hid));
  const double inv_sqrt_r = 1.0 / std::sqrt(static_cast<double>(R));
  BuiltLayer b;
  LayerWeights& w = b.w;
  w.kind = LayerKind::mla;
  w.wdkv = gaussian(rng, (R + P) * hid, inv_sqrt_h);
  std::fill(w.wdkv.begin(), w.wdkv.begin() + static_cast<std::ptrdiff_t>(hid), 0.0f);
  w.bdkv.assign(R + P, 0.0f);
  w.bdkv[0] = latent;
  w.wqn = gaussian(rng, H * D * hid, 1.5 * inv_sqrt_h);
  w.wqr = gaussian(rng, H * P * hid, 1.5 * inv_sqrt_h);
  w.wuk = gaussian(rng, H * D * R, inv_sqrt_r);
  w.wuv = gaussian(rng, H * D * R, inv_sqrt_r);
  for (size_t row = 0; row < H * D; ++row) w.wuk[row * R] = w.wuv[row * R] = 0.0f;
  std::fill_n(w.wuv.begin(), R, 0.0f);  // row 0 of head 0: (mla_sentinel / latent, 0, ...)
  w.wo = gaussian(rng, hid * H * D, 0.5 / std::sqrt(static_cast<double>(H * D)));

  // Absorbed query weights, folded in double and rounded once.
  w.wq_abs.assign(H * (R + P) * hid, 0.0f);
  std::vector<double> acc(hid);
  for (size_t h = 0; h < H; ++h) {
    float* out = &w.wq_abs[h * (R + P) * hid];
    for (size_t r = 0; r < R; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t d = 0; d < D; ++d) {
        const double uk = w.wuk[(h * D + d) * R + r];
        const float* qn = &w.wqn[(h * D + d) * hid];
        for (size_t i = 0; i < hid; ++i) acc[i] += uk * qn[i];
      }
      for (size_t i = 0; i < hid; ++i) out[r * hid + i] = static_cast<float>(acc[i]);
    }
    std::copy_n(&w.wqr[h * P * hid], P * hid, out + R * hid);
  }

  // ||c|| <= sqrt(latent^2 + lambda_max(Wc^T Wc) * ||x||^2), Wc = Wdkv rows [1, R); o_h is a
  // convex combination of v_h,t = Wuv_h c_t, so |o_j| <= ||Wuv_h row j|| * max ||c||.
  const double lc = latent;
  const double max_c =
      std::sqrt(lc * lc + static_cast<double>(hid) * gram_eigen_bound(w.wdkv, 1, R, hid));
  double max_row = 0.0;
  for (size_t row = 1; row < H * D; ++row)
    max_row = std::max(max_row, row_norm(&w.wuv[row * R], R));
  b.o_bound = max_row * max_c;
  return b;
}

// The gate sigmoid(wg . x + bg) stays in about [0.9, 0.94]: the state forgets slowly enough that
// many past tokens matter, and never grows without bound. Keys and values are scaled as in
// attention, but the state sums about 1 / (1 - g) ~ 13 terms that are largely coherent (the
// position code gives every x a common direction), so queries are scaled down by (1 - g) to keep
// o, and the layer's share of the residual stream, O(1) like the other kinds'.
BuiltLayer make_linear(Rng& rng, const ModelSpec& s) {
  const size_t hid = static_cast<size_t>(s.hidden_size);
  const size_t dim = static_cast<size_t>(s.num_q_heads) * s.head_dim;
  const double inv_sqrt_h = 1.0 / std::sqrt(static_cast<double>(hid));
  const double gate_bias = 2.5, forget = 1.0 - 1.0 / (1.0 + std::exp(-gate_bias));
  BuiltLayer b;
  LayerWeights& w = b.w;
  w.kind = LayerKind::linear;
  w.wq = gaussian(rng, dim * hid, 1.5 * forget * inv_sqrt_h);
  w.wk = gaussian(rng, dim * hid, inv_sqrt_h);
  w.wv = gaussian(rng, dim * hid, inv_sqrt_h);
  w.wg = gaussian(rng, static_cast<size_t>(s.num_q_heads) * hid, 0.1 * inv_sqrt_h);
  w.bg.assign(static_cast<size_t>(s.num_q_heads), static_cast<float>(gate_bias));
  w.wo = gaussian(rng, hid * dim, 0.5 / std::sqrt(static_cast<double>(dim)));
  return b;  // no sentinel: a linear layer's output skips the fp8 op
}

float cache_scale(const CacheSpec& c, float scale) {
  return c.dtype == DType::fp8_e4m3 ? scale : 1.0f;
}

// unit x 2^e for the smallest e with unit x 2^e >= bound: exact in float (a power-of-two multiple),
// and stored as exactly 2^e by a cache whose scale is `unit`.
float pow2_multiple_at_least(double bound, float unit) {
  double m = unit * std::exp2(std::ceil(std::log2(bound / unit)));
  if (m < bound) m *= 2.0;  // log2 of a ratio just above a power of two may round down
  return static_cast<float>(m);
}

// MLA's latent constant: scale x 2^b nearest 1 with 2^b an e4m3 power of two (2^-9 .. 2^8), so
// the fp8 cache stores it exactly; 1 when the scale is a power of two or the cache is not fp8.
float latent_constant(const CacheSpec& c) {
  const float scale = cache_scale(c, c.k_scale);
  const double b = std::clamp(std::round(-std::log2(static_cast<double>(scale))), -9.0, 8.0);
  return static_cast<float>(scale * std::exp2(b));
}

}  // namespace

ModelWeights make_model_weights(const ModelSpec& spec, const CacheSpec& cache) {
  ModelWeights m;
  m.spec = spec;
  const int32_t hid = spec.hidden_size;
  Rng rng(spec.weight_seed);
  m.latent_constant = latent_constant(cache);

  m.embed = gaussian(rng, static_cast<size_t>(spec.vocab_size) * hid, 1.0);
  double o_bound = 0.0;
  for (LayerKind kind : spec.layers) {
    BuiltLayer b = kind == LayerKind::attention ? make_attention(rng, spec)
                   : kind == LayerKind::mla     ? make_mla(rng, spec, m.latent_constant)
                                                : make_linear(rng, spec);
    o_bound = std::max(o_bound, b.o_bound);
    m.layers.push_back(std::move(b.w));
  }
  m.lm_head = gaussian(rng, static_cast<size_t>(spec.vocab_size) * hid,
                       2.0 / std::sqrt(static_cast<double>(hid)));

  // P and the sentinels of model_weights.h. The 1.15 margin covers the cache's rounding of the
  // other values (fp8: relative 2^-4 on every V or latent feature, 1.0625 < 1.15) and the
  // engine's float accumulation.
  const double bound = std::max(1e-3, 1.15 * o_bound);
  const double pow2_sentinel = std::exp2(std::ceil(std::log2(bound)));  // P
  m.sentinel = pow2_multiple_at_least(pow2_sentinel, cache_scale(cache, cache.v_scale));
  m.mla_sentinel = pow2_multiple_at_least(pow2_sentinel, m.latent_constant);
  for (auto& w : m.layers) {
    if (w.kind == LayerKind::attention) w.bv[0] = m.sentinel;
    if (w.kind == LayerKind::mla) w.wuv[0] = m.mla_sentinel / m.latent_constant;  // 2^c: exact
  }
  m.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.head_dim)));
  m.mla_softmax_scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.head_dim + spec.qk_rope_dim)));
  return m;
}

float ModelWeights::quant_scale(size_t layer, const CacheSpec& cache) const {
  switch (layers.at(layer).kind) {
    case LayerKind::attention:
      return round_through_scaled(sentinel, cache.dtype, cache_scale(cache, cache.v_scale)) /
             448.0f;
    case LayerKind::mla:
      return mla_sentinel / latent_constant *
             round_through_scaled(latent_constant, cache.dtype, cache_scale(cache, cache.k_scale)) /
             448.0f;
    case LayerKind::linear: break;
  }
  throw std::logic_error("quant_scale: layer " + std::to_string(layer) +
                         " is linear attention, whose output skips the fp8 op");
}

}  // namespace kv
