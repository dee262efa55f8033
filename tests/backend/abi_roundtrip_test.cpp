// abi_roundtrip_test.cpp — op_args -> ABI -> op_args gives back every descriptor field for field
// (pointers, strides, sizes, scales, dtypes), at awkward shapes: padded row strides, odd sizes,
// every cache layout and dtype. Also what the ABI side looks like (layout, dtype codes, shapes,
// absent tensors). Nothing is dereferenced: pointers are offsets into an unused arena.
#include <gtest/gtest.h>

#include <vector>

#include "backend/abi_convert.h"
#include "kernels/decode_splits.h"

namespace kv::backend {
namespace {

#define SAME(f) EXPECT_EQ(a.f, b.f) << #f

constexpr DLDevice kCpu = {kDLCPU, 0};
std::vector<char> arena(1 << 20);
template <class T = float>
T* at(size_t offset) {
  return reinterpret_cast<T*>(arena.data() + offset);
}

void expect_same(const PagedKv& a, const PagedKv& b) {
  SAME(k); SAME(v); SAME(dtype); SAME(num_blocks); SAME(block_size); SAME(num_kv_heads);
  SAME(head_dim); SAME(k_stride_block); SAME(k_stride_token); SAME(k_stride_head);
  SAME(v_stride_block); SAME(v_stride_token); SAME(v_stride_head); SAME(k_scale); SAME(v_scale);
}

// Caches of every layout: plain, interleaved, MLA latent, and the stride-blind view of seed 004.
std::vector<PagedKv> caches() {
  std::vector<PagedKv> out;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    PagedKv plain = make_paged_kv(at(64), KvLayout::kv_separate, t, 9, 3, 2, 5);
    plain.k_scale = 0.25f;
    plain.v_scale = 3.5f;
    PagedKv inter = make_paged_kv(at(128), KvLayout::kv_interleaved, t, 5, 7, 3, 4);
    PagedKv mla = make_paged_kv(at(256), KvLayout::kv_separate, t, 4, 16, 1, 11);
    mla.v = mla.k;
    out.insert(out.end(), {plain, inter, mla, with_shape_strides(inter)});
  }
  return out;
}

TEST(AbiRoundTrip, CacheLayoutsAndDtypes) {
  AbiBuilder build({kDLCUDA, 3});
  const kvcheck_kv_layout want[4] = {KVCHECK_LAYOUT_KV_SEPARATE, KVCHECK_LAYOUT_KV_INTERLEAVED,
                                     KVCHECK_LAYOUT_MLA_LATENT, KVCHECK_LAYOUT_KV_SEPARATE};
  const std::vector<PagedKv> cs = caches();
  for (size_t i = 0; i < cs.size(); ++i) {
    SCOPED_TRACE(i);
    const FillBlocksArgs a{.cache = cs[i], .block_ids = at<int32_t>(512), .num_ids = 3,
                           .pattern = FillPattern::random_bits, .seed = 0xfeedull};
    const kvcheck_fill_blocks_args abi = build.fill_blocks(a);
    EXPECT_EQ(abi.cache.layout, want[i % 4]);
    EXPECT_EQ(abi.cache.dtype, static_cast<int32_t>(cs[i].dtype));
    EXPECT_EQ(abi.cache.k.dl.device.device_type, kDLCUDA);
    EXPECT_EQ(abi.cache.k.dl.device.device_id, 3);
    EXPECT_EQ(abi.cache.k.dl.ndim, 4);
    EXPECT_EQ(abi.cache.v.dl.shape[3], cs[i].head_dim);
    const DLDataType dl = abi.cache.k.dl.dtype;
    switch (cs[i].dtype) {
      case DType::f32: EXPECT_TRUE(dl.code == kDLFloat && dl.bits == 32); break;
      case DType::f16: EXPECT_TRUE(dl.code == kDLFloat && dl.bits == 16); break;
      case DType::bf16: EXPECT_TRUE(dl.code == kDLBfloat && dl.bits == 16); break;
      case DType::fp8_e4m3: EXPECT_TRUE(dl.code == kDLUInt && dl.bits == 8); break;
    }
    FillBlocksArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    expect_same(a.cache, b.cache);
    SAME(block_ids); SAME(num_ids); SAME(pattern); SAME(seed);
  }
}

TEST(AbiRoundTrip, WriteKvWithPaddedRowsAndMlaWithoutV) {
  AbiBuilder build(kCpu);
  for (const PagedKv& c : caches()) {
    const int64_t row = c.num_kv_heads * c.head_dim;
    const WriteKvArgs a{.cache = c, .k = at(4096), .v = c.v == c.k ? nullptr : at(8192),
                        .k_row_stride = row + 3, .v_row_stride = row + 1,
                        .slot_mapping = at<int64_t>(12000), .num_tokens = 13,
                        .workspace = at<uint8_t>(14000), .workspace_bytes = 1000};
    const kvcheck_write_kv_args abi = build.write_kv(a);
    EXPECT_EQ(abi.workspace.dl.shape[0], 1000);
    EXPECT_EQ(abi.k.dl.ndim, 3);
    EXPECT_EQ(abi.k.dl.strides[0], a.k_row_stride);
    if (a.v == nullptr) {
      EXPECT_TRUE(abi.v.dl.data == nullptr && abi.v.dl.ndim == 0);
    }
    EXPECT_EQ(abi.slot_mapping.dtype, KVCHECK_I64);
    WriteKvArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    expect_same(a.cache, b.cache);
    SAME(k); SAME(v); SAME(k_row_stride); SAME(slot_mapping); SAME(num_tokens); SAME(workspace);
    SAME(workspace_bytes);
    // The workspace is sized per call: this call's rows, the cache's shape and dtype.
    const kvcheck_size_query q = size_query(a);
    EXPECT_EQ(q.op, KVCHECK_OP_WRITE_KV);
    EXPECT_EQ(q.max_rows, 13);
    EXPECT_EQ(q.num_kv_heads, c.num_kv_heads);
    EXPECT_EQ(q.head_dim, c.head_dim);
    EXPECT_EQ(q.layout, abi.cache.layout);
    EXPECT_EQ(q.cache_dtype, abi.cache.dtype);
    if (a.v) {
      SAME(v_row_stride);  // an absent tensor has no stride
    }
  }
}

PagedDecodeArgs decode_args(const PagedKv& c, int32_t rows, int32_t heads, int32_t v_dim,
                            int32_t max_splits) {
  PagedDecodeArgs a;
  a.cache = c;
  a.q = at(4096);
  a.q_row_stride = heads * c.head_dim + 7;
  a.out = at(16384);
  a.out_row_stride = heads * v_dim + 2;
  a.block_table = at<int32_t>(30000);
  a.block_table_stride = 5;
  a.seq_lens = at<int32_t>(31000);
  a.split_meta = at<int32_t>(32000);
  a.partial_out = at(40000);
  a.partial_lse = a.partial_out + static_cast<int64_t>(rows) * max_splits * heads * v_dim;
  a.max_splits = max_splits;
  a.num_rows = rows;
  a.num_q_heads = heads;
  a.v_dim = v_dim;
  a.scale = 0.3f;
  return a;
}

void expect_same(const PagedDecodeArgs& a, const PagedDecodeArgs& b) {
  expect_same(a.cache, b.cache);
  SAME(q); SAME(q_row_stride); SAME(out); SAME(out_row_stride); SAME(block_table);
  SAME(block_table_stride); SAME(seq_lens); SAME(split_meta); SAME(partial_out);
  SAME(partial_lse); SAME(max_splits); SAME(num_rows); SAME(num_q_heads); SAME(v_dim); SAME(scale);
}

TEST(AbiRoundTrip, PagedDecodeCarvesKvchecksWorkspace) {
  AbiBuilder build(kCpu);
  for (const PagedKv& c : caches())
    for (int32_t rows : {1, 5, 9})
      for (int32_t splits : {1, 3}) {
        const int32_t heads = c.num_kv_heads * 3, vd = c.v == c.k ? c.head_dim - 3 : c.head_dim;
        const PagedDecodeArgs a = decode_args(c, rows, heads, vd, splits);
        const kvcheck_paged_decode_args abi = build.paged_decode(a);
        EXPECT_EQ(abi.plan.dl.shape[0], static_cast<int64_t>(decode_plan_bytes(rows)));
        EXPECT_EQ(abi.workspace.dl.shape[0],
                  static_cast<int64_t>(decode_workspace_bytes(rows, heads, vd, splits)));
        EXPECT_TRUE(abi.lse.dl.data == nullptr && abi.lse.dl.ndim == 0);
        PagedDecodeArgs b;
        ASSERT_EQ(from_abi(abi, &b), "");
        expect_same(a, b);
      }
}

TEST(AbiRoundTrip, PagedDecodeResolvesVDimZeroAndTakesTheBackendsBuffers) {
  AbiBuilder build(kCpu);
  const PagedKv c = caches()[0];
  PagedDecodeArgs a = decode_args(c, 3, 4, c.head_dim, 2);
  a.v_dim = 0;  // "head_dim": comes back resolved
  DecodeBuffers bufs{at(200000), 999, at(300000), decode_workspace_bytes(3, 4, c.head_dim, 6),
                     at(400000)};
  const kvcheck_paged_decode_args abi = build.paged_decode(a, bufs);
  EXPECT_EQ(abi.v_dim, c.head_dim);
  EXPECT_EQ(abi.plan.dl.shape[0], 999);
  EXPECT_EQ(abi.lse.dl.ndim, 2);
  PagedDecodeArgs b;
  float* lse = nullptr;
  ASSERT_EQ(from_abi(abi, &b, &lse), "");
  EXPECT_EQ(b.v_dim, c.head_dim);
  EXPECT_EQ(b.split_meta, bufs.plan);
  EXPECT_EQ(b.partial_out, bufs.workspace);
  EXPECT_EQ(b.max_splits, 2);  // the args' limit; the workspace may hold more
  EXPECT_EQ(b.partial_lse, b.partial_out + 3 * 2 * 4 * c.head_dim);
  EXPECT_EQ(lse, bufs.lse);
}

// One plan per paged layer kind: the layout says which (mla latent, interleaved, separate).
TEST(AbiRoundTrip, DecodePlan) {
  AbiBuilder build(kCpu);
  for (int kind = 0; kind < 3; ++kind) {
    const DecodePlanArgs a{.seq_lens_host = at<int32_t>(100), .num_rows = 7, .block_size = 3,
                           .cache_dtype = DType::fp8_e4m3, .max_splits = 4, .num_q_heads = 6,
                           .num_kv_heads = 2, .head_dim = 11, .v_dim = 8, .latent = kind == 1,
                           .interleaved = kind == 2, .plan = at<int32_t>(900), .plan_bytes = 44,
                           .max_blocks_per_seq = 13};
    const kvcheck_decode_plan_args abi = build.decode_plan(a);
    EXPECT_EQ(abi.layout, kind == 1   ? KVCHECK_LAYOUT_MLA_LATENT
                          : kind == 2 ? KVCHECK_LAYOUT_KV_INTERLEAVED
                                      : KVCHECK_LAYOUT_KV_SEPARATE);
    DecodePlanArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    SAME(seq_lens_host); SAME(num_rows); SAME(block_size); SAME(cache_dtype); SAME(max_splits);
    SAME(num_q_heads); SAME(num_kv_heads); SAME(head_dim); SAME(v_dim); SAME(latent);
    SAME(interleaved); SAME(plan); SAME(plan_bytes); SAME(max_blocks_per_seq);
    // What the plan buffer is sized for: the same shape, the block table's row length with it.
    const kvcheck_size_query q = size_query(a);
    EXPECT_EQ(q.op, KVCHECK_OP_PAGED_DECODE);
    EXPECT_EQ(q.max_rows, 7);
    EXPECT_EQ(q.max_blocks_per_seq, 13);
    EXPECT_EQ(q.layout, abi.layout);
    EXPECT_EQ(q.cache_dtype, KVCHECK_FP8_E4M3);
    EXPECT_EQ(q.v_dim, 8);
  }
}

TEST(AbiRoundTrip, PagedPrefillWithItsHostMirrors) {
  AbiBuilder build(kCpu);
  for (const PagedKv& c : caches()) {
    const PagedPrefillArgs a{.cache = c, .q = at(4096), .q_row_stride = 6 * 11 + 1,
                             .out = at(70000), .out_row_stride = 6 * 8 + 3, .lse = at(90000),
                             .q_starts = at<int32_t>(100000), .ctx_lens = at<int32_t>(100100),
                             .block_table = at<int32_t>(100200), .block_table_stride = 5,
                             .workspace = at(200000), .workspace_bytes = 4000, .num_seqs = 3,
                             .num_rows = 10, .num_q_heads = 6, .v_dim = 8, .scale = 0.3f,
                             .max_q_len = 6, .max_ctx_len = 9,
                             .q_starts_host = at<int32_t>(300000),
                             .ctx_lens_host = at<int32_t>(300100)};
    const kvcheck_paged_prefill_args abi = build.paged_prefill(a);
    PagedPrefillArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    expect_same(a.cache, b.cache);
    SAME(q); SAME(q_row_stride); SAME(out); SAME(out_row_stride); SAME(lse); SAME(q_starts);
    SAME(ctx_lens); SAME(block_table); SAME(block_table_stride); SAME(workspace);
    SAME(workspace_bytes); SAME(num_seqs); SAME(num_rows); SAME(num_q_heads); SAME(v_dim);
    SAME(scale); SAME(max_q_len); SAME(max_ctx_len); SAME(q_starts_host); SAME(ctx_lens_host);
    const kvcheck_size_query q = size_query(a);
    EXPECT_EQ(q.op, KVCHECK_OP_PAGED_PREFILL);
    EXPECT_EQ(q.max_rows, 10);
    EXPECT_EQ(q.max_seqs, 3);
    EXPECT_EQ(q.max_blocks_per_seq, 5);
  }
}

TEST(AbiRoundTrip, GatherKv) {
  AbiBuilder build(kCpu);
  for (const PagedKv& c : caches()) {
    const GatherKvArgs a{.cache = c, .block_table = at<int32_t>(100), .block_table_stride = 6,
                         .ctx_lens = at<int32_t>(400), .ctx_starts = at<int32_t>(500),
                         .k_out = at(4096), .v_out = c.v == c.k ? nullptr : at(65536),
                         .num_seqs = 5};
    const kvcheck_gather_kv_args abi = build.gather_kv(a, 37);
    EXPECT_EQ(abi.k_out.dl.shape[0], 37);
    EXPECT_EQ(abi.ctx_starts.dl.shape[0], 6);
    GatherKvArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    expect_same(a.cache, b.cache);
    SAME(block_table); SAME(block_table_stride); SAME(ctx_lens); SAME(ctx_starts); SAME(k_out);
    SAME(v_out); SAME(num_seqs);
  }
}

TEST(AbiRoundTrip, VarlenAttentionIncludingMlaAndCacheDtypes) {
  AbiBuilder build(kCpu);
  const int32_t host_starts[10] = {0, 4, 9, 13, 17, 0, 6, 13, 20, 23};
  for (DType t : {DType::f32, DType::bf16, DType::fp8_e4m3})
    for (bool causal : {false, true}) {
      // MLA-shaped: one kv head of 11 latent features, v the same rows, v_dim 8.
      const VarlenAttnArgs a{.q = at(0), .q_row_stride = 6 * 11 + 1, .k = at(8192),
                             .v = at(8192), .kv_row_stride = 11 + 4,
                             .q_starts = at<int32_t>(60000), .k_starts = at<int32_t>(60100),
                             .out = at(70000), .out_row_stride = 6 * 8 + 3, .lse = at(90000),
                             .num_seqs = 4, .num_q_heads = 6, .num_kv_heads = 1, .head_dim = 11,
                             .v_dim = 8, .scale = 0.125f, .causal = causal, .kv_dtype = t,
                             .k_scale = 0.5f, .v_scale = 2.0f, .max_q_len = 9,
                             .max_k_len = 13, .workspace = at<uint8_t>(95000),
                             .workspace_bytes = 640, .q_starts_host = host_starts,
                             .k_starts_host = host_starts + 5};
      const kvcheck_varlen_attention_args abi = build.varlen_attention(a, 17, 23);
      EXPECT_EQ(abi.max_q_len, 9);
      EXPECT_EQ(abi.max_k_len, 13);
      EXPECT_EQ(abi.q.dl.shape[0], 17);
      EXPECT_EQ(abi.k.dl.shape[0], 23);
      VarlenAttnArgs b;
      ASSERT_EQ(from_abi(abi, &b), "");
      SAME(q); SAME(q_row_stride); SAME(k); SAME(v); SAME(kv_row_stride); SAME(q_starts);
      SAME(k_starts); SAME(out); SAME(out_row_stride); SAME(lse); SAME(num_seqs);
      SAME(num_q_heads); SAME(num_kv_heads); SAME(head_dim); SAME(v_dim); SAME(scale);
      SAME(causal); SAME(kv_dtype); SAME(k_scale); SAME(v_scale); SAME(max_q_len);
      SAME(max_k_len); SAME(workspace); SAME(workspace_bytes); SAME(q_starts_host);
      SAME(k_starts_host);
      EXPECT_EQ(abi.q_starts_host, host_starts);  // host memory: passed as it is
      const kvcheck_size_query q = size_query(a);
      EXPECT_EQ(q.op, KVCHECK_OP_VARLEN_ATTENTION);
      EXPECT_EQ(q.max_seqs, 4);
      EXPECT_EQ(q.num_q_heads, 6);
      EXPECT_EQ(q.v_dim, 8);
      EXPECT_EQ(q.cache_dtype, abi.kv_dtype);
      EXPECT_EQ(b.num_rows, 17);
      EXPECT_EQ(b.num_keys, 23);
    }
}

TEST(AbiRoundTrip, MergeStatesWithAndWithoutLseOut) {
  AbiBuilder build(kCpu);
  for (float* lse : {at(50000), static_cast<float*>(nullptr)}) {
    const MergeStatesArgs a{.out_a = at(0), .lse_a = at(10000), .out_b = at(20000),
                            .lse_b = at(30000), .out = at(40000), .lse = lse,
                            .row_stride = 3 * 5 + 2, .num_rows = 7, .num_merge = 4,
                            .num_heads = 3, .head_dim = 5};
    const kvcheck_merge_states_args abi = build.merge_states(a);
    MergeStatesArgs b;
    ASSERT_EQ(from_abi(abi, &b), "");
    SAME(out_a); SAME(lse_a); SAME(out_b); SAME(lse_b); SAME(out); SAME(lse); SAME(row_stride);
    SAME(num_rows); SAME(num_merge); SAME(num_heads); SAME(head_dim);
  }
}

TEST(AbiRoundTrip, LinearAttention) {
  AbiBuilder build(kCpu);
  const LinearAttnArgs a{.state = at(0), .state_block_stride = 2 * 3 * 3 + 5, .q = at(10000),
                         .k = at(20000), .v = at(30000), .qkv_row_stride = 2 * 3 + 1,
                         .gate = at(40000), .gate_row_stride = 2 + 3, .out = at(50000),
                         .out_row_stride = 2 * 3 + 4, .seq_starts = at<int32_t>(60000),
                         .state_blocks = at<int32_t>(60100),
                         .has_initial_state = at<int32_t>(60200), .num_seqs = 4, .num_heads = 2,
                         .head_dim = 3, .scale = 0.7f};
  const kvcheck_linear_attention_args abi = build.linear_attention(a, 11, 6);
  EXPECT_EQ(abi.state.dl.ndim, 4);
  EXPECT_EQ(abi.state.dl.shape[0], 6);
  LinearAttnArgs b;
  ASSERT_EQ(from_abi(abi, &b), "");
  SAME(state); SAME(state_block_stride); SAME(q); SAME(k); SAME(v); SAME(qkv_row_stride);
  SAME(gate); SAME(gate_row_stride); SAME(out); SAME(out_row_stride); SAME(seq_starts);
  SAME(state_blocks); SAME(has_initial_state); SAME(num_seqs); SAME(num_heads); SAME(head_dim);
  SAME(scale);
}

TEST(AbiRoundTrip, QuantFp8InPlaceAndWithAmaxRowsInMemory) {
  AbiBuilder build(kCpu);
  for (const int32_t* amax_rows : {at<int32_t>(90000), static_cast<int32_t*>(nullptr)}) {
    const QuantFp8Args a{.x = at(0), .y = at(0), .row_stride = 10, .cols = 7, .num_rows = 9,
                         .amax_rows = amax_rows, .amax_rows_fixed = 5, .scale_out = at(80000)};
    const kvcheck_quant_fp8_args abi = build.quant_fp8(a);
    EXPECT_EQ(abi.amax_rows.dl.ndim, amax_rows ? 1 : 0);
    QuantFp8Args b;
    ASSERT_EQ(from_abi(abi, &b), "");
    SAME(x); SAME(y); SAME(row_stride); SAME(cols); SAME(num_rows); SAME(amax_rows);
    SAME(amax_rows_fixed); SAME(scale_out);
  }
}

}  // namespace
}  // namespace kv::backend
