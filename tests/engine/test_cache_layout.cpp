// test_cache_layout.cpp — separate and hybrid cache layouts: sizes, slot sharing, strides.
#include <gtest/gtest.h>

#include "engine/cache_layout.h"

namespace kv {
namespace {

ModelSpec hybrid_model() {
  ModelSpec m;
  m.layers = {LayerKind::mla, LayerKind::linear, LayerKind::attention, LayerKind::linear};
  m.num_q_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 8;
  m.kv_lora_rank = 24;
  m.qk_rope_dim = 8;
  return m;
}

CacheSpec cache(PoolKind pool, DType dtype = DType::bf16) {
  CacheSpec c;
  c.num_blocks = 10;
  c.block_size = 16;
  c.dtype = dtype;
  c.layout = KvLayout::kv_interleaved;
  c.pool = pool;
  return c;
}

TEST(CacheLayout, BlockBytesPerKind) {
  const ModelSpec m = hybrid_model();
  const CacheSpec c = cache(PoolKind::hybrid);
  EXPECT_EQ(block_bytes(LayerKind::attention, m, c), 2 * 16 * 2 * 8 * 2);
  EXPECT_EQ(block_bytes(LayerKind::mla, m, c), 16 * 32 * 2);
  EXPECT_EQ(block_bytes(LayerKind::linear, m, c), 4 * 8 * 8 * 4);
  EXPECT_EQ(block_bytes(LayerKind::mla, m, cache(PoolKind::hybrid, DType::fp8_e4m3)), 16 * 32);
}

TEST(CacheLayout, HybridSlotsAreSharedByTheJthLayerOfEachGroup) {
  const ModelSpec m = hybrid_model();
  const CacheLayoutPlan plan = plan_cache_layout(m, cache(PoolKind::hybrid));
  // KV group: mla (slot 0), attention (slot 1); state group: linear (slot 0), linear (slot 1).
  EXPECT_EQ(plan.buffer_of_layer, std::vector<int32_t>({0, 0, 1, 1}));
  EXPECT_EQ(plan.page_bytes, 1024);  // the mla page (16 x 32 x 2) is the largest
  EXPECT_EQ(plan.buffer_bytes, std::vector<int64_t>({10 * 1024, 10 * 1024}));
  EXPECT_EQ(plan.total_bytes(), 20 * 1024);
}

TEST(CacheLayout, HybridViewsUseThePoolPageAsTheirBlockStride) {
  const ModelSpec m = hybrid_model();
  const CacheSpec c = cache(PoolKind::hybrid);
  const CacheLayoutPlan plan = plan_cache_layout(m, c);
  alignas(16) static char base[20 * 1024];
  const PagedKv att = layer_kv_view(base, LayerKind::attention, m, c, plan);
  EXPECT_EQ(att.k_stride_block, 512);  // 1024 bytes of bf16
  EXPECT_EQ(static_cast<char*>(att.v) - static_cast<char*>(att.k), 16 * 2 * 8 * 2);  // one K page
  const PagedKv mla = layer_kv_view(base, LayerKind::mla, m, c, plan);
  EXPECT_EQ(mla.k, mla.v);
  EXPECT_EQ(mla.num_kv_heads, 1);
  EXPECT_EQ(mla.head_dim, 32);
  EXPECT_EQ(mla.k_stride_block, 512);
  EXPECT_EQ(state_block_stride(m, plan), 256);
  const PagedKv fill = state_fill_view(base, m, c, plan);
  EXPECT_EQ(page_elems(fill), 4 * 8 * 8);
  EXPECT_EQ(fill.k_stride_block, 256);
  // Block b of every view of one slot starts at the same byte.
  for (int64_t b : {1, 7}) {
    EXPECT_EQ(k_offset(att, b, 0, 0, 0) * 2, b * 1024);
    EXPECT_EQ(k_offset(mla, b, 0, 0, 0) * 2, b * 1024);
    EXPECT_EQ(k_offset(fill, b, 0, 0, 0) * 4, b * 1024);
  }
}

TEST(CacheLayout, SeparatePoolGivesEachLayerItsOwnBuffer) {
  ModelSpec m = hybrid_model();
  m.layers = {LayerKind::attention, LayerKind::mla};
  CacheSpec c = cache(PoolKind::per_layer, DType::fp8_e4m3);
  c.layout = KvLayout::kv_separate;
  c.k_scale = 0.5f;
  c.v_scale = 0.25f;
  const CacheLayoutPlan plan = plan_cache_layout(m, c);
  EXPECT_EQ(plan.buffer_of_layer, std::vector<int32_t>({0, 1}));
  EXPECT_EQ(plan.buffer_bytes, std::vector<int64_t>({10 * 512, 10 * 512}));
  EXPECT_EQ(plan.page_bytes, 0);
  static char base[10 * 512];
  const PagedKv att = layer_kv_view(base, LayerKind::attention, m, c, plan);
  EXPECT_EQ(att.k_scale, 0.5f);
  EXPECT_EQ(att.v_scale, 0.25f);
  const PagedKv mla = layer_kv_view(base, LayerKind::mla, m, c, plan);
  EXPECT_EQ(mla.v_scale, 0.5f);  // V is the latent: stored with K's scale
  EXPECT_EQ(mla.k_stride_block, 16 * 32);
  m.layers.push_back(LayerKind::linear);
  EXPECT_THROW(plan_cache_layout(m, c), std::invalid_argument);
}

}  // namespace
}  // namespace kv
