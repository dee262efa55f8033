// cache_rows.h — read one (block, entry, head) row of head_dim features from the paged cache into
// floats, for the host ops. Same arithmetic as load_k / load_v of paged_kv.cuh (features are
// contiguous within a head, so the offset of feature 0 comes from k_offset / v_offset), with the
// dtype switch hoisted out of the feature loop so that the host device stays fast. A V row may be
// shorter than head_dim: MLA's V is the first v_dim features of the latent row, and the features
// past v_dim (the rope part) are never read as V.
#pragma once

#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/paged_kv.cuh"

namespace kv::host {

inline void load_row(const void* base, int64_t off, DType t, int n, float scale, float* dst) {
  switch (t) {
    case DType::f32: {
      const float* p = static_cast<const float*>(base) + off;
      for (int i = 0; i < n; ++i) dst[i] = p[i] * scale;
      break;
    }
    case DType::f16: {
      const uint16_t* p = static_cast<const uint16_t*>(base) + off;
      for (int i = 0; i < n; ++i) dst[i] = f16_to_f32(p[i]) * scale;
      break;
    }
    case DType::bf16: {
      const uint16_t* p = static_cast<const uint16_t*>(base) + off;
      for (int i = 0; i < n; ++i) dst[i] = bf16_to_f32(p[i]) * scale;
      break;
    }
    case DType::fp8_e4m3: {
      const uint8_t* p = static_cast<const uint8_t*>(base) + off;
      for (int i = 0; i < n; ++i) dst[i] = fp8_e4m3_to_f32(p[i]) * scale;
      break;
    }
  }
}

inline void load_k_row(const PagedKv& c, int64_t block, int64_t entry, int64_t head, float* dst) {
  load_row(c.k, k_offset(c, block, entry, head, 0), c.dtype, c.head_dim, c.k_scale, dst);
}

// The first `n` features (n <= head_dim) of a V row.
inline void load_v_row(const PagedKv& c, int64_t block, int64_t entry, int64_t head, int n,
                       float* dst) {
  load_row(c.v, v_offset(c, block, entry, head, 0), c.dtype, n, c.v_scale, dst);
}

}  // namespace kv::host
