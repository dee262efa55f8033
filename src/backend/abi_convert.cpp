// abi_convert.cpp — kvcheck -> ABI: AbiBuilder (abi_convert.h). Row tensors are 3-d
// [rows][heads][features] with the descriptor's row stride and packed heads; lse tensors 2-d
// [rows][heads], packed; index arrays 1-d; the cache 4-d [block][entry][head][feature].
#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/abi_convert.h"
#include "backend/abi_fields.h"
#include "kernels/decode_splits.h"

namespace kv::backend {

void AbiBuilder::cache(kvcheck_paged_kv& r, const PagedKv& c) {
  r.struct_size = sizeof(r);
  r.layout = layout_of(c);
  r.dtype = to_abi(c.dtype);
  copy_cache_fields(r, c);
  r.null_block = 0;
  view(r.k, c.k, r.dtype, {c.num_blocks, c.block_size, c.num_kv_heads, c.head_dim},
       {c.k_stride_block, c.k_stride_token, c.k_stride_head, 1});
  view(r.v, c.v, r.dtype, {c.num_blocks, c.block_size, c.num_kv_heads, c.head_dim},
       {c.v_stride_block, c.v_stride_token, c.v_stride_head, 1});
}

kvcheck_write_kv_args AbiBuilder::write_kv(const WriteKvArgs& a) {
  auto r = start<kvcheck_write_kv_args>();
  cache(r.cache, a.cache);
  const int32_t n = a.num_tokens, h = a.cache.num_kv_heads, hd = a.cache.head_dim;
  rows(r.k, a.k, KVCHECK_F32, n, h, hd, a.k_row_stride);
  rows(r.v, a.v, KVCHECK_F32, n, h, hd, a.v_row_stride);
  array(r.slot_mapping, a.slot_mapping, KVCHECK_I64, n);
  r.num_tokens = n;
  array(r.workspace, a.workspace, KVCHECK_U8, static_cast<int64_t>(a.workspace_bytes));
  return r;
}

kvcheck_paged_decode_args AbiBuilder::paged_decode(const PagedDecodeArgs& a,
                                                   const DecodeBuffers& b) {
  auto r = start<kvcheck_paged_decode_args>();
  cache(r.cache, a.cache);
  const int32_t n = a.num_rows, nq = a.num_q_heads, hd = a.cache.head_dim;
  const int32_t vd = a.v_dim == 0 ? hd : a.v_dim;
  attention_rows(r, a, n, b.lse);
  view(r.block_table, a.block_table, KVCHECK_I32, {n, a.block_table_stride},
       {a.block_table_stride, 1});
  array(r.seq_lens, a.seq_lens, KVCHECK_I32, n);
  if (b.plan)
    array(r.plan, b.plan, KVCHECK_U8, static_cast<int64_t>(b.plan_bytes));
  else
    array(r.plan, a.split_meta, KVCHECK_U8, static_cast<int64_t>(decode_plan_bytes(n)));
  if (b.workspace) {
    array(r.workspace, b.workspace, KVCHECK_U8, static_cast<int64_t>(b.workspace_bytes));
  } else if (a.partial_out) {
    const int64_t out_floats = static_cast<int64_t>(n) * a.max_splits * nq * vd;
    if (a.partial_lse != a.partial_out + out_floats)
      throw std::invalid_argument(
          "paged_decode: partial_lse does not follow partial_out: pass the workspace the "
          "backend asked for in DecodeBuffers");
    array(r.workspace, a.partial_out, KVCHECK_U8,
          static_cast<int64_t>(decode_workspace_bytes(n, nq, vd, a.max_splits)));
  } else {
    array(r.workspace, nullptr, KVCHECK_U8, 0);
  }
  r.num_rows = n;
  r.num_q_heads = nq;
  r.v_dim = vd;
  r.scale = a.scale;
  r.max_splits = a.max_splits;
  return r;
}

kvcheck_decode_plan_args AbiBuilder::decode_plan(const DecodePlanArgs& a) {
  auto r = start<kvcheck_decode_plan_args>();
  copy_plan_fields(r, a);
  r.cache_dtype = to_abi(a.cache_dtype);
  array(r.plan, a.plan, KVCHECK_U8, static_cast<int64_t>(a.plan_bytes));
  r.layout = layout_of(a);
  return r;
}

kvcheck_kv_layout layout_of(const DecodePlanArgs& a) {
  return a.latent        ? KVCHECK_LAYOUT_MLA_LATENT
         : a.interleaved ? KVCHECK_LAYOUT_KV_INTERLEAVED
                         : KVCHECK_LAYOUT_KV_SEPARATE;
}

kvcheck_size_query size_query(const DecodePlanArgs& s) {
  kvcheck_size_query q{};
  q.struct_size = sizeof(q);
  q.op = KVCHECK_OP_PAGED_DECODE;
  q.max_rows = q.max_seqs = s.num_rows;
  q.num_q_heads = s.num_q_heads;
  q.num_kv_heads = s.num_kv_heads;
  q.head_dim = s.head_dim;
  q.v_dim = s.v_dim > 0 ? s.v_dim : s.head_dim;
  q.block_size = s.block_size;
  q.max_blocks_per_seq = s.max_blocks_per_seq;
  q.cache_dtype = to_abi(s.cache_dtype);
  q.layout = layout_of(s);
  q.max_splits = s.max_splits;
  return q;
}

namespace {

// A query for one call of `op` over cache `c`: its shape, dtype and layout; one split.
kvcheck_size_query cache_query(kvcheck_op op, const PagedKv& c) {
  kvcheck_size_query q{};
  q.struct_size = sizeof(q);
  q.op = op;
  q.num_kv_heads = c.num_kv_heads;
  q.head_dim = q.v_dim = c.head_dim;
  q.block_size = c.block_size;
  q.cache_dtype = to_abi(c.dtype);
  q.layout = layout_of(c);
  q.max_splits = 1;
  return q;
}

}  // namespace

kvcheck_size_query size_query(const PagedPrefillArgs& a) {
  kvcheck_size_query q = cache_query(KVCHECK_OP_PAGED_PREFILL, a.cache);
  q.max_rows = a.num_rows;
  q.max_seqs = a.num_seqs;
  q.num_q_heads = a.num_q_heads;
  if (a.v_dim > 0) q.v_dim = a.v_dim;
  q.max_blocks_per_seq = a.block_table_stride;
  return q;
}

kvcheck_size_query size_query(const WriteKvArgs& a) {
  kvcheck_size_query q = cache_query(KVCHECK_OP_WRITE_KV, a.cache);
  q.max_rows = q.max_seqs = a.num_tokens;
  return q;
}

kvcheck_size_query size_query(const VarlenAttnArgs& a) {
  kvcheck_size_query q{};
  q.struct_size = sizeof(q);
  q.op = KVCHECK_OP_VARLEN_ATTENTION;
  q.max_rows = std::max(a.num_rows, a.num_keys);  // both row counts bound its staging
  q.max_seqs = a.num_seqs;
  q.num_q_heads = a.num_q_heads;
  q.num_kv_heads = a.num_kv_heads;
  q.head_dim = a.head_dim;
  q.v_dim = a.v_dim > 0 ? a.v_dim : a.head_dim;
  q.cache_dtype = to_abi(a.kv_dtype);
  q.layout = KVCHECK_LAYOUT_KV_SEPARATE;  // contiguous rows
  q.max_splits = 1;
  return q;
}

kvcheck_gather_kv_args AbiBuilder::gather_kv(const GatherKvArgs& a, int32_t total_ctx) {
  auto r = start<kvcheck_gather_kv_args>();
  cache(r.cache, a.cache);
  const int32_t n = a.num_seqs, h = a.cache.num_kv_heads, hd = a.cache.head_dim;
  view(r.block_table, a.block_table, KVCHECK_I32, {n, a.block_table_stride},
       {a.block_table_stride, 1});
  array(r.ctx_lens, a.ctx_lens, KVCHECK_I32, n);
  array(r.ctx_starts, a.ctx_starts, KVCHECK_I32, n + 1);
  rows(r.k_out, a.k_out, KVCHECK_F32, total_ctx, h, hd, static_cast<int64_t>(h) * hd);
  rows(r.v_out, a.v_out, KVCHECK_F32, total_ctx, h, hd, static_cast<int64_t>(h) * hd);
  r.num_seqs = n;
  return r;
}

kvcheck_varlen_attention_args AbiBuilder::varlen_attention(const VarlenAttnArgs& a,
                                                           int32_t num_rows, int32_t keys) {
  auto r = start<kvcheck_varlen_attention_args>();
  const int32_t nq = a.num_q_heads, nkv = a.num_kv_heads, hd = a.head_dim;
  const int32_t vd = a.v_dim == 0 ? hd : a.v_dim;
  rows(r.q, a.q, KVCHECK_F32, num_rows, nq, hd, a.q_row_stride);
  rows(r.k, a.k, KVCHECK_F32, keys, nkv, hd, a.kv_row_stride);
  rows(r.v, a.v, KVCHECK_F32, keys, nkv, hd, a.kv_row_stride);
  array(r.q_starts, a.q_starts, KVCHECK_I32, a.num_seqs + 1);
  array(r.k_starts, a.k_starts, KVCHECK_I32, a.num_seqs + 1);
  rows(r.out, a.out, KVCHECK_F32, num_rows, nq, vd, a.out_row_stride);
  view(r.lse, a.lse, KVCHECK_F32, {num_rows, nq}, {nq, 1});
  copy_varlen_fields(r, a);
  r.v_dim = vd;
  r.causal = a.causal ? 1 : 0;
  r.kv_dtype = to_abi(a.kv_dtype);
  array(r.workspace, a.workspace, KVCHECK_U8, static_cast<int64_t>(a.workspace_bytes));
  return r;
}

kvcheck_merge_states_args AbiBuilder::merge_states(const MergeStatesArgs& a) {
  auto r = start<kvcheck_merge_states_args>();
  const int32_t n = a.num_rows, nh = a.num_heads, hd = a.head_dim;
  rows(r.out_a, a.out_a, KVCHECK_F32, n, nh, hd, a.row_stride);
  view(r.lse_a, a.lse_a, KVCHECK_F32, {n, nh}, {nh, 1});
  rows(r.out_b, a.out_b, KVCHECK_F32, n, nh, hd, a.row_stride);
  view(r.lse_b, a.lse_b, KVCHECK_F32, {n, nh}, {nh, 1});
  rows(r.out, a.out, KVCHECK_F32, n, nh, hd, a.row_stride);
  view(r.lse_out, a.lse, KVCHECK_F32, {n, nh}, {nh, 1});
  r.num_rows = n;
  r.num_merge = a.num_merge;
  r.num_heads = nh;
  r.head_dim = hd;
  return r;
}

kvcheck_fill_blocks_args AbiBuilder::fill_blocks(const FillBlocksArgs& a) {
  auto r = start<kvcheck_fill_blocks_args>();
  cache(r.cache, a.cache);
  array(r.block_ids, a.block_ids, KVCHECK_I32, a.num_ids);
  r.num_ids = a.num_ids;
  r.pattern = static_cast<int32_t>(a.pattern);
  r.seed = a.seed;
  return r;
}

kvcheck_linear_attention_args AbiBuilder::linear_attention(const LinearAttnArgs& a,
                                                           int32_t num_rows,
                                                           int32_t state_blocks) {
  auto r = start<kvcheck_linear_attention_args>();
  const int64_t nh = a.num_heads, d = a.head_dim;
  view(r.state, a.state, KVCHECK_F32, {state_blocks, nh, d, d},
       {a.state_block_stride, d * d, d, 1});
  rows(r.q, a.q, KVCHECK_F32, num_rows, nh, d, a.qkv_row_stride);
  rows(r.k, a.k, KVCHECK_F32, num_rows, nh, d, a.qkv_row_stride);
  rows(r.v, a.v, KVCHECK_F32, num_rows, nh, d, a.qkv_row_stride);
  view(r.gate, a.gate, KVCHECK_F32, {num_rows, nh}, {a.gate_row_stride, 1});
  rows(r.out, a.out, KVCHECK_F32, num_rows, nh, d, a.out_row_stride);
  array(r.seq_starts, a.seq_starts, KVCHECK_I32, a.num_seqs + 1);
  array(r.state_blocks, a.state_blocks, KVCHECK_I32, a.num_seqs);
  array(r.has_initial_state, a.has_initial_state, KVCHECK_I32, a.num_seqs);
  r.num_seqs = a.num_seqs;
  r.num_heads = a.num_heads;
  r.head_dim = a.head_dim;
  r.scale = a.scale;
  return r;
}

kvcheck_quant_fp8_args AbiBuilder::quant_fp8(const QuantFp8Args& a) {
  auto r = start<kvcheck_quant_fp8_args>();
  view(r.x, a.x, KVCHECK_F32, {a.num_rows, a.cols}, {a.row_stride, 1});
  view(r.y, a.y, KVCHECK_F32, {a.num_rows, a.cols}, {a.row_stride, 1});
  array(r.amax_rows, a.amax_rows, KVCHECK_I32, 1);
  r.amax_rows_fixed = a.amax_rows_fixed;
  r.num_rows = a.num_rows;
  r.cols = a.cols;
  array(r.scale_out, a.scale_out, KVCHECK_F32, 1);
  return r;
}

kvcheck_paged_prefill_args AbiBuilder::paged_prefill(const PagedPrefillArgs& a) {
  auto r = start<kvcheck_paged_prefill_args>();
  cache(r.cache, a.cache);
  attention_rows(r, a, a.num_rows, a.lse);
  array(r.q_starts, a.q_starts, KVCHECK_I32, a.num_seqs + 1);
  array(r.ctx_lens, a.ctx_lens, KVCHECK_I32, a.num_seqs);
  view(r.block_table, a.block_table, KVCHECK_I32, {a.num_seqs, a.block_table_stride},
       {a.block_table_stride, 1});
  array(r.workspace, a.workspace, KVCHECK_U8, static_cast<int64_t>(a.workspace_bytes));
  copy_prefill_fields(r, a);
  return r;
}

}  // namespace kv::backend
