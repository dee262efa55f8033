// mla_decode_support.h — one MLA-shaped paged decode call over a latent cache the test owns, and
// its float64 reference. Shared by the MLA decode tests and the hybrid-pool tests (where the latent
// cache is a view of blocks that also hold linear-attention states).
//
// MLA shape: num_kv_heads 1, head_dim = R + P (latent rank + rope features), cache.v == cache.k,
// v_dim = R, every query head reads the one latent head. The reference recomputes each head from
// the logical latent rows, rounded the way the cache stores them; it never reads the cache.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_test_support.h"

namespace kv::test {

struct MlaDecode : DecodeBuffers {
  PagedKv cache;  // the latent cache: num_kv_heads 1, v == k
  int32_t rank = 0, heads = 0;
  std::vector<int32_t> lens;

  PagedDecodeArgs args() { return DecodeBuffers::args(cache, lens, heads, rank); }
};

// A decode of rows with `lens` over blocks `table` (row stride `table_stride`), random q, poisoned
// out and workspaces. Splits of `chunk_blocks` blocks each; 0 means one split per row.
inline MlaDecode make_mla_decode(const PagedKv& cache, int32_t rank, int32_t heads,
                                 std::vector<int32_t> lens, std::vector<int32_t> table,
                                 int32_t table_stride, int32_t chunk_blocks, Rng& rng) {
  MlaDecode d;
  d.cache = cache;
  d.rank = rank;
  d.heads = heads;
  d.lens = std::move(lens);
  d.table = std::move(table);
  d.table_stride = table_stride;
  const int32_t bs = cache.block_size, hd = cache.head_dim;
  const int32_t rows = static_cast<int32_t>(d.lens.size());
  const int32_t maxlen = std::max(1, *std::max_element(d.lens.begin(), d.lens.end()));
  const int32_t chunk = chunk_blocks > 0 ? chunk_blocks * bs : (maxlen + bs - 1) / bs * bs;
  d.max_splits = (maxlen + chunk - 1) / chunk;
  d.meta = {chunk};
  for (int32_t len : d.lens) d.meta.push_back(len == 0 ? d.max_splits : (len + chunk - 1) / chunk);
  d.q_stride = heads * hd + 3;
  d.out_stride = heads * rank + 5;
  d.q = random_floats(rng, static_cast<size_t>(rows) * d.q_stride);
  d.scale = 2.0f / std::sqrt(static_cast<float>(hd));  // sharper than 1/sqrt(d): less uniform
  d.out.resize(static_cast<size_t>(rows) * d.out_stride);
  d.partial_out.resize(static_cast<size_t>(rows) * d.max_splits * heads * rank);
  d.partial_lse.resize(static_cast<size_t>(rows) * d.max_splits * heads);
  d.poison_outputs();
  return d;
}

// Write `len` latent rows [len][head_dim] of one sequence into its slots, K only (v == nullptr),
// without zeroing its blocks first: callers decide what the unused tail holds.
inline void write_latent(const PagedKv& c, const int32_t* table, int32_t len, const float* lat) {
  const int32_t bs = c.block_size;
  std::vector<int64_t> slots(len);
  for (int32_t t = 0; t < len; ++t) slots[t] = static_cast<int64_t>(table[t / bs]) * bs + t % bs;
  WriteKvArgs w;
  w.cache = c;
  w.k = lat;
  w.k_row_stride = c.head_dim;
  w.slot_mapping = slots.data();
  w.num_tokens = len;
  host::write_kv(w);
}

// float64 attention of query head `h` of row `r` over the row's logical latent rows `lat`
// ([len][head_dim]): scores over all head_dim features, V = the first rank features, both rounded
// through the cache dtype and k_scale.
inline std::vector<double> mla_reference(const MlaDecode& d, int32_t r, int32_t h,
                                         const float* lat) {
  const int32_t hd = d.cache.head_dim, len = d.lens[r];
  const float* qh = &d.q[static_cast<size_t>(r) * d.q_stride + static_cast<size_t>(h) * hd];
  auto cached = [&](int32_t t, int32_t f) {
    return static_cast<double>(
        round_through_scaled(lat[static_cast<size_t>(t) * hd + f], d.cache.dtype, d.cache.k_scale));
  };
  std::vector<double> score(len), out(d.rank, 0.0);
  double m = -INFINITY, sum = 0.0;
  for (int32_t t = 0; t < len; ++t) {
    double dot = 0.0;
    for (int32_t f = 0; f < hd; ++f) dot += static_cast<double>(qh[f]) * cached(t, f);
    score[t] = dot * d.scale;
    m = std::max(m, score[t]);
  }
  for (int32_t t = 0; t < len; ++t) {
    const double p = std::exp(score[t] - m);
    sum += p;
    for (int32_t f = 0; f < d.rank; ++f) out[f] += p * cached(t, f);
  }
  for (double& o : out) o /= sum;
  return out;
}

// Relative L2 error of head h of row r against the reference (NaN if the output has a NaN).
inline double mla_error(const MlaDecode& d, int32_t r, int32_t h, const float* lat) {
  const std::vector<double> ref = mla_reference(d, r, h, lat);
  return rel_l2(&d.out[static_cast<size_t>(r) * d.out_stride + static_cast<size_t>(h) * d.rank],
                ref.data(), d.rank);
}

// Float accumulation over at most a few hundred keys of identically rounded inputs: relative L2
// near 1e-6 (as kDecodeTol of paged_decode_test); 2e-5 leaves margin without hiding a wrong key,
// weight or feature.
inline constexpr double kMlaDecodeTol = 2e-5;

}  // namespace kv::test
