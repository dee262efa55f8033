// gather_kv.cpp — host op: gather the cached context of prefill sequences from the paged cache
// into contiguous float K/V workspaces [total_ctx_tokens][kv_heads][head_dim].
//
// With `assume_contiguous` it reproduces the seed-004 bug (vLLM PR 37228): the element address is
// computed from the shape, block * page + entry * kv_heads * head_dim + head * head_dim + feat,
// from cache.k / cache.v, as if the block stride were one page. On the plain layout that is the
// right address; on the interleaved one ([K0][V0][K1][V1]...) it reads the wrong blocks' K and V.
// With v_out == nullptr only K is gathered (MLA: V is the latent K, read from k_out).
#include "kernels/host/cache_rows.h"
#include "kernels/host/host_ops.h"

namespace kv::host {
namespace {

void gather_row_contiguous_bug(const PagedKv& c, int64_t block, int64_t entry, float* k_dst,
                               float* v_dst) {
  const int64_t row = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const int64_t off = block * page_elems(c) + entry * row;
  load_row(c.k, off, c.dtype, static_cast<int>(row), c.k_scale, k_dst);
  if (v_dst) load_row(c.v, off, c.dtype, static_cast<int>(row), c.v_scale, v_dst);
}

}  // namespace

void gather_kv(const GatherKvArgs& a) {
  const PagedKv& c = a.cache;
  const int64_t row = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t* table = a.block_table + static_cast<int64_t>(s) * a.block_table_stride;
    for (int32_t t = 0; t < a.ctx_lens[s]; ++t) {
      const int64_t block = table[t / c.block_size], entry = t % c.block_size;
      float* k_dst = a.k_out + (static_cast<int64_t>(a.ctx_starts[s]) + t) * row;
      float* v_dst =
          a.v_out ? a.v_out + (static_cast<int64_t>(a.ctx_starts[s]) + t) * row : nullptr;
      if (a.assume_contiguous) {
        gather_row_contiguous_bug(c, block, entry, k_dst, v_dst);
        continue;
      }
      for (int32_t h = 0; h < c.num_kv_heads; ++h) {
        load_k_row(c, block, entry, h, k_dst + h * c.head_dim);
        if (v_dst) load_v_row(c, block, entry, h, c.head_dim, v_dst + h * c.head_dim);
      }
    }
  }
}

}  // namespace kv::host
