// cache_layout.cpp — separate and hybrid cache layouts.
#include "engine/cache_layout.h"

#include <algorithm>
#include <stdexcept>

namespace kv {
namespace {

bool attention_like(LayerKind k) { return k != LayerKind::linear; }

int32_t latent_dim(const ModelSpec& m) { return m.kv_lora_rank + m.qk_rope_dim; }

int64_t state_floats(const ModelSpec& m) {
  return int64_t{m.num_q_heads} * m.head_dim * m.head_dim;
}

}  // namespace

int64_t CacheLayoutPlan::total_bytes() const {
  int64_t t = 0;
  for (int64_t b : buffer_bytes) t += b;
  return t;
}

int64_t block_bytes(LayerKind kind, const ModelSpec& m, const CacheSpec& c) {
  const int64_t es = dtype_size(c.dtype);
  switch (kind) {
    case LayerKind::attention: return 2 * int64_t{c.block_size} * m.num_kv_heads * m.head_dim * es;
    case LayerKind::mla: return int64_t{c.block_size} * latent_dim(m) * es;
    case LayerKind::linear: return state_floats(m) * 4;
  }
  return 0;
}

CacheLayoutPlan plan_cache_layout(const ModelSpec& m, const CacheSpec& c) {
  CacheLayoutPlan plan;
  const int64_t blocks = c.num_blocks;
  if (c.pool == PoolKind::per_layer) {
    for (LayerKind k : m.layers) {
      if (!attention_like(k))
        throw std::invalid_argument("a linear layer needs the hybrid pool (validation missed it)");
      plan.buffer_of_layer.push_back(static_cast<int32_t>(plan.buffer_bytes.size()));
      plan.buffer_bytes.push_back(blocks * block_bytes(k, m, c));
    }
    return plan;
  }
  // Hybrid: 16-byte aligned pages so that every view's blocks start on a vector boundary.
  for (LayerKind k : m.layers) plan.page_bytes = std::max(plan.page_bytes, block_bytes(k, m, c));
  plan.page_bytes = (plan.page_bytes + 15) / 16 * 16;
  int32_t next_kv = 0, next_state = 0;
  for (LayerKind k : m.layers) {
    const int32_t slot = attention_like(k) ? next_kv++ : next_state++;
    plan.buffer_of_layer.push_back(slot);
  }
  plan.buffer_bytes.assign(std::max(next_kv, next_state), blocks * plan.page_bytes);
  return plan;
}

PagedKv layer_kv_view(void* base, LayerKind kind, const ModelSpec& m, const CacheSpec& c,
                      const CacheLayoutPlan& plan) {
  PagedKv kv;
  if (kind == LayerKind::attention) {
    kv = make_paged_kv(base, c.layout, c.dtype, c.num_blocks, c.block_size, m.num_kv_heads,
                       m.head_dim);
    if (plan.page_bytes > 0)  // hybrid: [K_b][V_b] with the pool's block stride
      kv.k_stride_block = kv.v_stride_block = plan.page_bytes / dtype_size(c.dtype);
  } else if (kind == LayerKind::mla) {
    // One latent head; V is the first kv_lora_rank features of the same rows.
    kv = make_paged_kv(base, KvLayout::kv_separate, c.dtype, c.num_blocks, c.block_size, 1,
                       latent_dim(m));
    kv.v = kv.k;
    if (plan.page_bytes > 0)
      kv.k_stride_block = kv.v_stride_block = plan.page_bytes / dtype_size(c.dtype);
  } else {
    throw std::invalid_argument("layer_kv_view: a linear layer has no KV view");
  }
  if (c.dtype == DType::fp8_e4m3) {
    kv.k_scale = c.k_scale;
    kv.v_scale = kind == LayerKind::mla ? c.k_scale : c.v_scale;
  }
  return kv;
}

int64_t state_block_stride(const ModelSpec& m, const CacheLayoutPlan& plan) {
  return plan.page_bytes > 0 ? plan.page_bytes / 4 : state_floats(m);
}

PagedKv state_fill_view(void* base, const ModelSpec& m, const CacheSpec& c,
                        const CacheLayoutPlan& plan) {
  PagedKv kv = make_paged_kv(base, KvLayout::kv_separate, DType::f32, c.num_blocks, 1, 1,
                             static_cast<int32_t>(state_floats(m)));
  kv.v = kv.k;  // one page per block: filled twice, harmlessly
  kv.k_stride_block = kv.v_stride_block = state_block_stride(m, plan);
  return kv;
}

}  // namespace kv
