// paged_kv.cuh — the paged KV-cache descriptor: the only way any op addresses the cache.
//
// A cache is a set of fixed-size blocks ("pages") of `block_size` token entries. K and V each carry
// their own explicit strides (in elements), so one descriptor covers
//   - the plain layout:       K pages for all blocks, then V pages for all blocks
//                              (k_stride_block = v_stride_block = page);
//   - the interleaved layout:  [K0][V0][K1][V1]... as hybrid models use
//                              (k_stride_block = v_stride_block = 2 * page, v = k + page),
// without copying. Ops never compute an offset from the shape: they call k_offset / v_offset.
#pragma once

#include <cstdint>

#include "dtype.cuh"
#include "hd.cuh"

namespace kv {

struct PagedKv {
  void* k = nullptr;  // element (block 0, entry 0, head 0, feature 0) of K
  void* v = nullptr;  // the same element of V
  DType dtype = DType::f32;
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int64_t k_stride_block = 0, k_stride_token = 0, k_stride_head = 0;  // elements
  int64_t v_stride_block = 0, v_stride_token = 0, v_stride_head = 0;  // elements
  float k_scale = 1.0f;  // per-tensor dequantisation scales (fp8); 1 for the other dtypes
  float v_scale = 1.0f;
};

// Elements of one K (or V) page: what the layouts are built from.
KV_HD int64_t page_elems(const PagedKv& c) {
  return static_cast<int64_t>(c.block_size) * c.num_kv_heads * c.head_dim;
}

KV_HD int64_t k_offset(const PagedKv& c, int64_t block, int64_t entry, int64_t head, int64_t feat) {
  return block * c.k_stride_block + entry * c.k_stride_token + head * c.k_stride_head + feat;
}

KV_HD int64_t v_offset(const PagedKv& c, int64_t block, int64_t entry, int64_t head, int64_t feat) {
  return block * c.v_stride_block + entry * c.v_stride_token + head * c.v_stride_head + feat;
}

KV_HD float load_k(const PagedKv& c, int64_t block, int64_t entry, int64_t head, int64_t feat) {
  return load_as_f32(c.k, k_offset(c, block, entry, head, feat), c.dtype) * c.k_scale;
}

KV_HD float load_v(const PagedKv& c, int64_t block, int64_t entry, int64_t head, int64_t feat) {
  return load_as_f32(c.v, v_offset(c, block, entry, head, feat), c.dtype) * c.v_scale;
}

// The descriptor a stride-blind caller builds from the shape alone: block stride one page, entry
// and head strides of a dense [block_size][kv_heads][head_dim] page, from the same k and v. Right
// for the kv_separate layout; on the kv_interleaved one it addresses the wrong blocks' K and V.
// This is the seed-004 bug (vLLM PR 37228), which the engine models by handing gather_kv this
// descriptor.
KV_HD PagedKv with_shape_strides(const PagedKv& c) {
  PagedKv s = c;
  s.k_stride_block = s.v_stride_block = page_elems(c);
  s.k_stride_token = s.v_stride_token = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  s.k_stride_head = s.v_stride_head = c.head_dim;
  return s;
}

// Named as the ABI names them (KVCHECK_LAYOUT_KV_SEPARATE, KVCHECK_LAYOUT_KV_INTERLEAVED).
enum class KvLayout : int32_t { kv_separate = 0, kv_interleaved = 1 };

// Bytes one layer's cache occupies for `num_blocks` blocks (K and V together), either layout.
inline int64_t layer_cache_bytes(int32_t num_blocks, int32_t block_size, int32_t kv_heads,
                                 int32_t head_dim, DType dtype) {
  return 2ll * num_blocks * block_size * kv_heads * head_dim * dtype_size(dtype);
}

// Describe the cache of one layer that starts at `base`, in the given layout. Within a page the
// order is [entry][head][feature] (NHD), as in vLLM's flash-attention layout.
inline PagedKv make_paged_kv(void* base, KvLayout layout, DType dtype, int32_t num_blocks,
                             int32_t block_size, int32_t kv_heads, int32_t head_dim) {
  PagedKv c;
  c.dtype = dtype;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  const int64_t page = page_elems(c);
  c.k_stride_token = c.v_stride_token = static_cast<int64_t>(kv_heads) * head_dim;
  c.k_stride_head = c.v_stride_head = head_dim;
  char* b = static_cast<char*>(base);
  if (layout == KvLayout::kv_separate) {
    c.k_stride_block = c.v_stride_block = page;
    c.k = b;
    c.v = b + page * num_blocks * dtype_size(dtype);
  } else {
    c.k_stride_block = c.v_stride_block = 2 * page;
    c.k = b;
    c.v = b + page * dtype_size(dtype);
  }
  return c;
}

}  // namespace kv
