// ref_test_support.h — small models and caches for the reference tests, and an independent
// float64 rms_norm / matvec so that the tests do not check the reference with its own helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_weights.h"
#include "util/rng.h"
#include "kernels/model_math.cuh"

namespace kv::test {

// H = 4 query heads (2 KV heads), D = 8, R = 12, P = 4, hidden 32.
inline ModelSpec small_spec(std::vector<LayerKind> layers, uint64_t seed = 3) {
  ModelSpec m;
  m.layers = std::move(layers);
  m.num_q_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 8;
  m.hidden_size = 32;
  m.vocab_size = 50;
  m.weight_seed = seed;
  m.kv_lora_rank = 12;
  m.qk_rope_dim = 4;
  return m;
}

inline CacheSpec cache_of(DType t, float k_scale = 1.0f, float v_scale = 1.0f) {
  CacheSpec c;
  c.dtype = t;
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  return c;
}

inline std::string describe(const CacheSpec& c) {
  return std::string(c.dtype == DType::f32    ? "f32"
                     : c.dtype == DType::f16  ? "f16"
                     : c.dtype == DType::bf16 ? "bf16"
                                              : "fp8_e4m3") +
         " k_scale " + std::to_string(c.k_scale) + " v_scale " + std::to_string(c.v_scale);
}

// bf16, f16, f32, and fp8 with every pair of k_scale, v_scale in {1, 0.05, 0.37}.
inline std::vector<CacheSpec> all_caches() {
  std::vector<CacheSpec> v = {cache_of(DType::bf16), cache_of(DType::f16), cache_of(DType::f32)};
  for (float ks : {1.0f, 0.05f, 0.37f})
    for (float vs : {1.0f, 0.05f, 0.37f}) v.push_back(cache_of(DType::fp8_e4m3, ks, vs));
  return v;
}

inline std::vector<int32_t> random_tokens(uint64_t seed, int32_t n, int32_t vocab) {
  Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.uniform_int(0, vocab - 1));
  return t;
}

// A random vector of norm sqrt(n), like every x = rms_norm(h).
inline std::vector<double> random_x(Rng& rng, size_t n) {
  std::vector<double> x(n);
  double ss = 0.0;
  for (auto& e : x) {
    e = rng.normal();
    ss += e * e;
  }
  for (auto& e : x) e *= std::sqrt(static_cast<double>(n) / ss);
  return x;
}

inline std::vector<double> direct_matvec(const std::vector<float>& w,
                                         const std::vector<double>& x) {
  std::vector<double> y(w.size() / x.size(), 0.0);
  for (size_t r = 0; r < y.size(); ++r)
    for (size_t c = 0; c < x.size(); ++c) y[r] += static_cast<double>(w[r * x.size() + c]) * x[c];
  return y;
}

inline std::vector<double> direct_rms_norm(const std::vector<double>& h) {
  double ss = 0.0;
  for (double v : h) ss += v * v;
  std::vector<double> x(h);
  for (double& v : x) v /= std::sqrt(ss / static_cast<double>(h.size()) + kRmsNormEps);
  return x;
}

// The residual stream entering layer 0 at `pos`.
inline std::vector<double> embedded(const ModelWeights& w, int32_t token, int32_t pos) {
  const int32_t hid = w.spec.hidden_size;
  std::vector<double> h(static_cast<size_t>(hid));
  for (int32_t i = 0; i < hid; ++i)
    h[i] = w.embed[static_cast<size_t>(token) * hid + i] + position_code<double>(pos, i, hid);
  return h;
}

inline double rel_l2(const double* got, const double* want, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace kv::test
