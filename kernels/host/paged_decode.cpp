// paged_decode.cpp — host op: split-KV paged decode (flash-decoding), one query token per row.
//
// Per row and split, the online softmax of attn_state.cuh runs tile by tile, a tile being one
// cache block. Scores of entries outside the split (or past the sequence end) are masked to -inf,
// but P·V runs over every entry of the tile, as FlashMLA does: p = 0 times a stale NaN/Inf left in
// the unused tail of the last block is NaN. That whole-tile product is what makes the seed-000
// bug class (new blocks not zeroed) visible; do not "optimise" it to the valid entries.
// The partial states go to the workspace and are merged from there, as the GPU combine kernel does.
//
// Scores use all head_dim features of q and K; a head's output is the first v_dim features of V
// (MLA: V is the kv_lora_rank part of the latent row, K the whole row, cache.v == cache.k). Only
// those v_dim features of V are read, over the whole tile: the rope features of a stale tail entry
// never enter the output, its first v_dim features do.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attn_state.cuh"
#include "kernels/host/cache_rows.h"
#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {
namespace {

struct Scratch {
  std::vector<float> k;          // one tile of one kv head: [block_size][head_dim]
  std::vector<float> v;          // [block_size][v_dim]
  std::vector<float> p;          // [block_size]
  std::vector<float> acc;        // [group][v_dim]
  std::vector<SoftmaxState> st;  // [group]
};

// One split of one row for the q heads that share kv head `kvh`: accumulate the tiles of tokens
// [start, end) into sc.acc / sc.st.
void attend_split(const PagedDecodeArgs& a, const int32_t* table, const float* q, int64_t start,
                  int64_t end, int32_t kvh, int32_t group, int32_t vd, Scratch& sc) {
  const PagedKv& c = a.cache;
  const int32_t bs = c.block_size, hd = c.head_dim;
  // The tiles are the blocks overlapping [start, end); end <= seq_len, so the last one is at
  // most block ceil(seq_len / bs) - 1 and no table entry past the sequence's blocks is read.
  for (int64_t tile = start / bs; tile <= (end - 1) / bs; ++tile) {
    poll_point(static_cast<int64_t>(bs) * group * (hd + vd));  // --max-seconds
    const int32_t block = table[tile];
    for (int32_t e = 0; e < bs; ++e) {
      const int64_t tok = tile * bs + e;
      if (tok >= start && tok < end) load_k_row(c, block, e, kvh, &sc.k[e * hd]);
      load_v_row(c, block, e, kvh, vd, &sc.v[e * vd]);  // every entry: the whole-tile P·V
    }
    for (int32_t g = 0; g < group; ++g) {
      const float* qh = q + static_cast<int64_t>(kvh * group + g) * hd;
      float tile_max = -INFINITY;
      for (int32_t e = 0; e < bs; ++e) {
        const int64_t tok = tile * bs + e;
        float s = -INFINITY;
        if (tok >= start && tok < end) {
          float dot = 0.0f;
          for (int32_t f = 0; f < hd; ++f) dot += qh[f] * sc.k[e * hd + f];
          s = dot * a.scale;
        }
        sc.p[e] = s;
        if (s > tile_max) tile_max = s;  // a NaN score is not a max; it enters through p below
      }
      SoftmaxState& st = sc.st[g];
      float* acc = &sc.acc[static_cast<int64_t>(g) * vd];
      const float f = softmax_rescale(st, tile_max);
      if (f != 1.0f)
        for (int32_t i = 0; i < vd; ++i) acc[i] *= f;
      for (int32_t e = 0; e < bs; ++e) {
        // exp(-inf - m) is 0 unless m is also -inf; a masked entry is 0 either way.
        sc.p[e] = (sc.p[e] == -INFINITY) ? 0.0f : expf(sc.p[e] - st.m);
        st.d += sc.p[e];
      }
      for (int32_t e = 0; e < bs; ++e) {
        const float pe = sc.p[e];
        const float* ve = &sc.v[e * vd];
        for (int32_t i = 0; i < vd; ++i) acc[i] += pe * ve[i];
      }
    }
  }
}

// Combine the row's split states from the workspace into out (natural-log lse weights).
void merge_splits(const PagedDecodeArgs& a, int32_t row, int32_t num_splits, int32_t vd) {
  float* out = a.out + row * a.out_row_stride;
  for (int32_t h = 0; h < a.num_q_heads; ++h) {
    float* o = out + static_cast<int64_t>(h) * vd;
    for (int32_t i = 0; i < vd; ++i) o[i] = 0.0f;
    float lse = -INFINITY;  // start from the empty state
    for (int32_t s = 0; s < num_splits; ++s) {
      const int64_t idx = (static_cast<int64_t>(row) * a.max_splits + s) * a.num_q_heads + h;
      const float* po = a.partial_out + idx * vd;
      const MergeWeights w = merge_weights(lse, a.partial_lse[idx]);
      for (int32_t i = 0; i < vd; ++i) o[i] = w.wa * o[i] + w.wb * po[i];
      lse = w.lse;
    }
  }
}

}  // namespace

void paged_decode(const PagedDecodeArgs& a) {
  const PagedKv& c = a.cache;
  const int32_t hd = c.head_dim, bs = c.block_size;
  const int32_t vd = a.v_dim == 0 ? hd : a.v_dim;
  if (vd < 0 || vd > hd)
    throw std::invalid_argument("paged_decode: v_dim " + std::to_string(a.v_dim) +
                                " is neither 0 nor in [1, head_dim " + std::to_string(hd) + "]");
  const int32_t group = a.num_q_heads / c.num_kv_heads;
  const int64_t chunk = a.split_meta[0];
  Scratch sc;
  sc.k.assign(static_cast<size_t>(bs) * hd, 0.0f);
  sc.v.assign(static_cast<size_t>(bs) * vd, 0.0f);
  sc.p.assign(bs, 0.0f);
  sc.acc.assign(static_cast<size_t>(group) * vd, 0.0f);
  sc.st.assign(group, SoftmaxState{});

  for (int32_t row = 0; row < a.num_rows; ++row) {
    const int64_t seq_len = a.seq_lens[row];
    if (seq_len <= 0) continue;  // a padded row writes nothing
    const int32_t num_splits = a.split_meta[kDecodeMetaHeader + row];
    if (num_splits > a.max_splits || (num_splits > 0 && chunk <= 0))
      throw std::invalid_argument("paged_decode: row " + std::to_string(row) + " has " +
                                  std::to_string(num_splits) + " splits of " +
                                  std::to_string(chunk) + " tokens, workspace holds " +
                                  std::to_string(a.max_splits));
    const int32_t* table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
    const float* q = a.q + row * a.q_row_stride;
    for (int32_t s = 0; s < num_splits; ++s) {
      const int64_t start = s * chunk;
      const int64_t end = std::min(start + chunk, seq_len);
      for (int32_t kvh = 0; kvh < c.num_kv_heads; ++kvh) {
        std::fill(sc.acc.begin(), sc.acc.end(), 0.0f);
        std::fill(sc.st.begin(), sc.st.end(), SoftmaxState{});
        if (start < end) attend_split(a, table, q, start, end, kvh, group, vd, sc);
        for (int32_t g = 0; g < group; ++g) {
          const int32_t h = kvh * group + g;
          const int64_t idx = (static_cast<int64_t>(row) * a.max_splits + s) * a.num_q_heads + h;
          const float d = sc.st[g].d;
          const float* acc = &sc.acc[static_cast<int64_t>(g) * vd];
          float* po = a.partial_out + idx * vd;
          // d == 0 only for an empty split, whose acc is 0 (or NaN from 0 × stale NaN: kept).
          for (int32_t i = 0; i < vd; ++i) po[i] = (d != 0.0f) ? acc[i] / d : acc[i];
          a.partial_lse[idx] = softmax_lse(sc.st[g]);
        }
      }
    }
    merge_splits(a, row, num_splits, vd);
  }
}

}  // namespace kv::host
