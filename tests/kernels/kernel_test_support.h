// kernel_test_support.h — shared fixtures of the kernel tests: random data, a paged cache in a
// host buffer poisoned with NaN, shuffled block tables, the buffers of a paged decode and of a
// linear-attention call, and the error measures. The float64 references live in each test file;
// nothing here reads the cache except through the ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/host/host_ops.h"

namespace kv::test {

using Rng = std::mt19937_64;

inline std::vector<float> random_floats(Rng& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline int32_t random_int(Rng& rng, int32_t lo, int32_t hi) {  // inclusive
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

// A float NaN with a payload no op produces: an element still holding it was never written.
inline constexpr uint32_t kPoisonBits = 0x7fc0dead;
inline void poison(std::vector<float>& v) {
  const float p = f32_from_bits(kPoisonBits);
  std::fill(v.begin(), v.end(), p);
}
inline bool is_poison(float x) { return f32_bits(x) == kPoisonBits; }

// The value the cache gives back for x: stored as x / scale in `t`, loaded times scale.
inline float cache_round(float x, DType t, float scale) {
  return round_through(x / scale, t) * scale;
}

// One layer's cache in a host buffer, every byte a NaN code of its dtype until written.
struct TestCache {
  std::vector<uint64_t> storage;
  PagedKv desc;
};

inline TestCache make_test_cache(KvLayout layout, DType dtype, int32_t num_blocks,
                                 int32_t block_size, int32_t kv_heads, int32_t head_dim) {
  TestCache c;
  const int64_t bytes = layer_cache_bytes(num_blocks, block_size, kv_heads, head_dim, dtype);
  c.storage.resize(static_cast<size_t>(bytes + 7) / 8);
  host::fill_pattern(c.storage.data(), static_cast<size_t>(bytes), FillPattern::nan, dtype, 0, 0);
  c.desc =
      make_paged_kv(c.storage.data(), layout, dtype, num_blocks, block_size, kv_heads, head_dim);
  return c;
}

// Block tables for sequences of the given lengths: disjoint blocks drawn from a shuffled
// permutation of 1..num_blocks-1 (non-contiguous, non-monotonic). Entries past a sequence's own
// blocks point at block 0, which tests leave poisoned: reading one shows as NaN.
inline std::vector<int32_t> shuffled_tables(Rng& rng, int32_t num_blocks, int32_t block_size,
                                            const std::vector<int32_t>& lens, int32_t stride) {
  std::vector<int32_t> ids(num_blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> table(lens.size() * stride, 0);
  size_t next = 0;
  for (size_t s = 0; s < lens.size(); ++s)
    for (int32_t b = 0; b < (lens[s] + block_size - 1) / block_size; ++b)
      table[s * stride + b] = ids.at(next++);
  return table;
}

inline int32_t blocks_needed(const std::vector<int32_t>& lens, int32_t block_size) {
  int32_t n = 1;  // block 0
  for (int32_t l : lens) n += (l + block_size - 1) / block_size;
  return n;
}

// Zero the blocks a sequence owns (as the engine's zero-on-alloc does), then write its logical
// K/V rows [len][kv_heads * head_dim] into them with write_kv.
inline void store_sequence(TestCache& c, const int32_t* table, int32_t len, const float* k,
                           const float* v) {
  const int32_t bs = c.desc.block_size;
  const int32_t nb = (len + bs - 1) / bs;
  host::fill_blocks(FillBlocksArgs{c.desc, table, nb, FillPattern::zero, 0});
  std::vector<int64_t> slots(len);
  for (int32_t t = 0; t < len; ++t) slots[t] = static_cast<int64_t>(table[t / bs]) * bs + t % bs;
  WriteKvArgs w;
  w.cache = c.desc;
  w.k = k;
  w.v = v;
  w.k_row_stride = w.v_row_stride = static_cast<int64_t>(c.desc.num_kv_heads) * c.desc.head_dim;
  w.slot_mapping = slots.data();
  w.num_tokens = len;
  host::write_kv(w);
}

// One paged decode call's host buffers besides the cache: block tables and split plan, queries,
// output and split workspace, with their strides. Each test fills them its own way.
struct DecodeBuffers {
  std::vector<int32_t> table, meta;
  int32_t table_stride = 0, max_splits = 1, q_stride = 0, out_stride = 0;
  std::vector<float> q, out, partial_out, partial_lse;
  float scale = 0.0f;

  // The call over `cache` for rows of `lens`, `q_heads` query heads, v_dim (0: head_dim).
  PagedDecodeArgs args(const PagedKv& cache, const std::vector<int32_t>& lens, int32_t q_heads,
                       int32_t v_dim = 0) {
    return {.cache = cache, .q = q.data(), .q_row_stride = q_stride, .out = out.data(),
            .out_row_stride = out_stride, .block_table = table.data(),
            .block_table_stride = table_stride, .seq_lens = lens.data(), .split_meta = meta.data(),
            .partial_out = partial_out.data(), .partial_lse = partial_lse.data(),
            .max_splits = max_splits, .num_rows = static_cast<int32_t>(lens.size()),
            .num_q_heads = q_heads, .v_dim = v_dim, .scale = scale};
  }
  void poison_outputs() {
    poison(out);
    poison(partial_out);
    poison(partial_lse);
  }
};

// One linear_attention call's host buffers besides the state pool: rows of q, k and v (one row
// stride), gate logits and output, and per sequence its first row (starts[s] .. starts[s + 1]),
// state block and whether it continues a stored state.
struct LinearAttnBuffers {
  std::vector<float> q, k, v, gate, out;
  std::vector<int32_t> starts, blocks, init;
  int64_t qkv_stride = 0, gate_stride = 0, out_stride = 0;

  // The call over the state pool at `state` (blocks `state_block_stride` floats apart).
  LinearAttnArgs args(float* state, int64_t state_block_stride, int32_t heads, int32_t dim,
                      float scale) {
    return {.state = state, .state_block_stride = state_block_stride, .q = q.data(),
            .k = k.data(), .v = v.data(), .qkv_row_stride = qkv_stride, .gate = gate.data(),
            .gate_row_stride = gate_stride, .out = out.data(), .out_row_stride = out_stride,
            .seq_starts = starts.data(), .state_blocks = blocks.data(),
            .has_initial_state = init.data(), .num_seqs = static_cast<int32_t>(blocks.size()),
            .num_heads = heads, .head_dim = dim, .scale = scale};
  }
};

// ‖out − ref‖ / ‖ref‖ over n values (absolute when ref is 0); NaN when out has a NaN.
inline double rel_l2(const float* out, const double* ref, int n) {
  double num = 0.0, den = 0.0;
  for (int i = 0; i < n; ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Awkward decode row lengths: every fifth row empty, then single-token, then exactly 3 blocks,
// then random in [2, longest]; a lone row gets 2 blocks + 1 token. Lengths never pass `longest`.
inline std::vector<int32_t> row_lengths(Rng& rng, int32_t rows, int32_t bs, int32_t longest) {
  if (rows == 1) return {std::min(longest, 2 * bs + 1)};
  std::vector<int32_t> lens(rows);
  for (int32_t i = 0; i < rows; ++i)
    lens[i] = i % 5 == 0   ? 0
              : i % 5 == 1 ? 1
              : i % 5 == 2 ? std::min(longest, 3 * bs)
                           : random_int(rng, 2, longest);
  return lens;
}

inline bool all_finite(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::fp8_e4m3:
      return "fp8";
  }
  return "?";
}

}  // namespace kv::test
