// gather_kv.cpp — host op: gather the cached context of prefill sequences from the paged cache
// into contiguous float K/V workspaces [total_ctx_tokens][kv_heads][head_dim].
// Every address comes from the descriptor's strides (a descriptor built from the shape alone is the
// seed-004 bug: with_shape_strides, paged_kv.cuh). With v_out == nullptr only K is gathered (MLA:
// V is the latent K, read from k_out).
#include "kernels/host/cache_rows.h"
#include "kernels/host/host_ops.h"

namespace kv::host {

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
      for (int32_t h = 0; h < c.num_kv_heads; ++h) {
        load_k_row(c, block, entry, h, k_dst + h * c.head_dim);
        if (v_dst) load_v_row(c, block, entry, h, c.head_dim, v_dst + h * c.head_dim);
      }
    }
  }
}

}  // namespace kv::host
