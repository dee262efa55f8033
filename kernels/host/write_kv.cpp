// write_kv.cpp — host op: store K and V rows of the step into their cache slots.
//
// With v == nullptr only K is written (MLA: the latent row is K, and V is read from the same
// entries through cache.v == cache.k); V memory is then not touched, wherever cache.v points.
#include "kernels/host/host_ops.h"

namespace kv::host {

void write_kv(const WriteKvArgs& a) {
  const PagedKv& c = a.cache;
  for (int32_t t = 0; t < a.num_tokens; ++t) {
    const int64_t slot = a.slot_mapping[t];
    if (slot < 0) continue;  // padded row
    const int64_t block = slot / c.block_size, entry = slot % c.block_size;
    const float* k = a.k + t * a.k_row_stride;
    const float* v = a.v ? a.v + t * a.v_row_stride : nullptr;
    for (int32_t h = 0; h < c.num_kv_heads; ++h) {
      const int64_t ko = k_offset(c, block, entry, h, 0), vo = v_offset(c, block, entry, h, 0);
      // Divided by the scale for every dtype, not only fp8, so that load_k / load_v (which
      // multiply by it) invert the store for any scale; with the usual scale 1 this is exact.
      for (int32_t f = 0; f < c.head_dim; ++f)
        store_from_f32(c.k, ko + f, c.dtype, k[h * c.head_dim + f] / c.k_scale);
      if (v)
        for (int32_t f = 0; f < c.head_dim; ++f)
          store_from_f32(c.v, vo + f, c.dtype, v[h * c.head_dim + f] / c.v_scale);
    }
  }
}

}  // namespace kv::host
