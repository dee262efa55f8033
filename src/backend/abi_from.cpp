// abi_from.cpp — ABI -> kvcheck: from_abi (abi_convert.h), the inverse of AbiBuilder. Each
// function reads through an AbiReader, which keeps the first mismatch; *out is written only when
// everything matched. Where kvcheck's descriptor has one stride for several tensors (varlen K and
// V, merge_states' three outputs, linear attention's q/k/v) the tensors must agree on it.
#include <string>

#include "backend/abi_convert.h"
#include "kernels/decode_splits.h"

namespace kv::backend {
namespace {

// One row stride shared by several tensors of a descriptor: the first present one sets it.
struct SharedStride {
  int64_t value = 0;
  bool set = false;

  void take(AbiReader& r, const kvcheck_tensor& t, const char* what) {
    if (!r.ok() || t.dl.data == nullptr) return;
    if (set && outer_stride(t) != value)
      r.fail(what, "row stride " + std::to_string(outer_stride(t)) + " differs from " +
                       std::to_string(value) + " (kvcheck's descriptor has one for these)");
    value = outer_stride(t);
    set = true;
  }
};

template <class T>
T* as(void* p) {
  return static_cast<T*>(p);
}

std::string done(const AbiReader& r) { return r.error(); }

}  // namespace

std::string from_abi(const kvcheck_write_kv_args& in, WriteKvArgs* out) {
  AbiReader r("write_kv");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  WriteKvArgs o;
  o.cache = r.cache(in.cache);
  const int32_t n = r.count("num_tokens", in.num_tokens);
  const int64_t h = in.cache.num_kv_heads, hd = in.cache.head_dim;
  o.k = as<const float>(r.tensor(in.k, "k", KVCHECK_F32, {n, h, hd}, {-1, hd, 1}));
  o.v = as<const float>(r.tensor(in.v, "v", KVCHECK_F32, {n, h, hd}, {-1, hd, 1}));
  o.k_row_stride = outer_stride(in.k);
  o.v_row_stride = outer_stride(in.v);
  o.slot_mapping = as<const int64_t>(r.tensor(in.slot_mapping, "slot_mapping", KVCHECK_I64,
                                              {n}, {1}));
  o.num_tokens = n;
  o.workspace_bytes = r.bytes(in.workspace, "workspace");
  o.workspace = r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1});
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_paged_decode_args& in, PagedDecodeArgs* out, float** lse) {
  AbiReader r("paged_decode");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  PagedDecodeArgs o;
  o.cache = r.cache(in.cache);
  const int32_t n = r.count("num_rows", in.num_rows);
  const int32_t nq = r.count("num_q_heads", in.num_q_heads);
  const int64_t hd = in.cache.head_dim;
  const int64_t vd = in.v_dim == 0 ? hd : in.v_dim;
  o.q = as<const float>(r.tensor(in.q, "q", KVCHECK_F32, {n, nq, hd}, {-1, hd, 1}));
  o.q_row_stride = outer_stride(in.q);
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {n, nq, vd}, {-1, vd, 1}));
  o.out_row_stride = outer_stride(in.out);
  float* lse_data = as<float>(r.tensor(in.lse, "lse", KVCHECK_F32, {n, nq}, {nq, 1}));
  if (lse) *lse = lse_data;
  o.block_table = as<const int32_t>(
      r.tensor(in.block_table, "block_table", KVCHECK_I32, {n, -1}, {-1, 1}));
  o.block_table_stride = static_cast<int32_t>(outer_stride(in.block_table));
  o.seq_lens = as<const int32_t>(r.tensor(in.seq_lens, "seq_lens", KVCHECK_I32, {n}, {1}));
  // The plan in kvcheck's format (kDecodeMetaHeader): a header and one count per row.
  const size_t plan_bytes = r.bytes(in.plan, "plan");
  if (in.plan.dl.data && plan_bytes < decode_plan_bytes(n))
    r.fail("plan", std::to_string(plan_bytes) + " bytes, kvcheck's plan of " +
                       std::to_string(n) + " rows takes " + std::to_string(decode_plan_bytes(n)));
  o.split_meta = as<const int32_t>(r.tensor(in.plan, "plan", KVCHECK_U8, {-1}, {1}));
  // The workspace as kvcheck's decode lays it out for max_splits splits (as many as its bytes hold
  // when the args do not say).
  const size_t ws_bytes = r.bytes(in.workspace, "workspace");
  const size_t per_split = decode_workspace_bytes(n, nq, vd, 1);
  o.max_splits = in.max_splits > 0                ? in.max_splits
                 : per_split > 0 ? static_cast<int32_t>(ws_bytes / per_split)
                                 : 1;
  if (in.workspace.dl.data && ws_bytes < decode_workspace_bytes(n, nq, vd, o.max_splits))
    r.fail("workspace", std::to_string(ws_bytes) + " bytes, kvcheck's decode of " +
                            std::to_string(n) + " rows and " + std::to_string(o.max_splits) +
                            " splits takes " +
                            std::to_string(decode_workspace_bytes(n, nq, vd, o.max_splits)));
  o.partial_out = as<float>(r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1}));
  if (o.partial_out)
    o.partial_lse = o.partial_out + static_cast<int64_t>(n) * o.max_splits * nq * vd;
  o.num_rows = n;
  o.num_q_heads = nq;
  o.v_dim = in.v_dim;
  o.scale = in.scale;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_decode_plan_args& in, DecodePlanArgs* out) {
  AbiReader r("paged_decode_plan");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  DecodePlanArgs o;
  o.seq_lens_host = in.seq_lens_host;
  o.num_rows = r.count("num_rows", in.num_rows);
  o.num_q_heads = in.num_q_heads;
  o.num_kv_heads = in.num_kv_heads;
  o.head_dim = in.head_dim;
  o.v_dim = in.v_dim;
  o.block_size = in.block_size;
  o.cache_dtype = r.cache_dtype("cache_dtype", in.cache_dtype);
  o.max_splits = in.max_splits;
  o.plan_bytes = r.bytes(in.plan, "plan");
  o.plan = as<int32_t>(r.tensor(in.plan, "plan", KVCHECK_U8, {-1}, {1}));
  o.latent = in.layout == KVCHECK_LAYOUT_MLA_LATENT;
  o.interleaved = in.layout == KVCHECK_LAYOUT_KV_INTERLEAVED;
  o.max_blocks_per_seq = in.max_blocks_per_seq;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_gather_kv_args& in, GatherKvArgs* out) {
  AbiReader r("gather_kv");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  GatherKvArgs o;
  o.cache = r.cache(in.cache);
  const int32_t n = r.count("num_seqs", in.num_seqs);
  const int64_t h = in.cache.num_kv_heads, hd = in.cache.head_dim;
  o.block_table = as<const int32_t>(
      r.tensor(in.block_table, "block_table", KVCHECK_I32, {n, -1}, {-1, 1}));
  o.block_table_stride = static_cast<int32_t>(outer_stride(in.block_table));
  o.ctx_lens = as<const int32_t>(r.tensor(in.ctx_lens, "ctx_lens", KVCHECK_I32, {n}, {1}));
  o.ctx_starts =
      as<const int32_t>(r.tensor(in.ctx_starts, "ctx_starts", KVCHECK_I32, {n + 1}, {1}));
  // kvcheck's gather writes packed rows: no row stride in its descriptor.
  o.k_out = as<float>(r.tensor(in.k_out, "k_out", KVCHECK_F32, {-1, h, hd}, {h * hd, hd, 1}));
  o.v_out = as<float>(r.tensor(in.v_out, "v_out", KVCHECK_F32, {-1, h, hd}, {h * hd, hd, 1}));
  o.num_seqs = n;
  o.total_ctx = in.k_out.dl.ndim > 0 ? static_cast<int32_t>(in.k_out.dl.shape[0]) : 0;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_varlen_attention_args& in, VarlenAttnArgs* out) {
  AbiReader r("varlen_attention");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  VarlenAttnArgs o;
  const int32_t n = r.count("num_seqs", in.num_seqs);
  const int64_t nq = in.num_q_heads, nkv = in.num_kv_heads, hd = in.head_dim;
  const int64_t vd = in.v_dim == 0 ? hd : in.v_dim;
  o.q = as<const float>(r.tensor(in.q, "q", KVCHECK_F32, {-1, nq, hd}, {-1, hd, 1}));
  o.q_row_stride = outer_stride(in.q);
  o.k = as<const float>(r.tensor(in.k, "k", KVCHECK_F32, {-1, nkv, hd}, {-1, hd, 1}));
  o.v = as<const float>(r.tensor(in.v, "v", KVCHECK_F32, {-1, nkv, hd}, {-1, hd, 1}));
  SharedStride kv;
  kv.take(r, in.k, "k");
  kv.take(r, in.v, "v");
  o.kv_row_stride = kv.value;
  o.q_starts = as<const int32_t>(r.tensor(in.q_starts, "q_starts", KVCHECK_I32, {n + 1}, {1}));
  o.k_starts = as<const int32_t>(r.tensor(in.k_starts, "k_starts", KVCHECK_I32, {n + 1}, {1}));
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {-1, nq, vd}, {-1, vd, 1}));
  o.out_row_stride = outer_stride(in.out);
  o.lse = as<float>(r.tensor(in.lse, "lse", KVCHECK_F32, {-1, nq}, {nq, 1}));
  o.num_seqs = n;
  o.num_q_heads = in.num_q_heads;
  o.num_kv_heads = in.num_kv_heads;
  o.head_dim = in.head_dim;
  o.v_dim = in.v_dim;
  o.scale = in.scale;
  o.causal = in.causal != 0;
  o.kv_dtype = r.cache_dtype("kv_dtype", in.kv_dtype);
  o.k_scale = in.k_scale;
  o.v_scale = in.v_scale;
  o.max_q_len = in.max_q_len;
  o.max_k_len = in.max_k_len;
  // The row counts the tensors were built with (the ops read the starts arrays).
  o.num_rows = in.q.dl.ndim > 0 ? static_cast<int32_t>(in.q.dl.shape[0]) : 0;
  o.num_keys = in.k.dl.ndim > 0 ? static_cast<int32_t>(in.k.dl.shape[0]) : 0;
  o.workspace_bytes = r.bytes(in.workspace, "workspace");
  o.workspace = r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1});
  o.q_starts_host = in.q_starts_host;
  o.k_starts_host = in.k_starts_host;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_merge_states_args& in, MergeStatesArgs* out) {
  AbiReader r("merge_states");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  MergeStatesArgs o;
  const int32_t n = r.count("num_rows", in.num_rows);
  const int64_t nh = in.num_heads, hd = in.head_dim;
  o.out_a = as<const float>(r.tensor(in.out_a, "out_a", KVCHECK_F32, {n, nh, hd}, {-1, hd, 1}));
  o.out_b = as<const float>(r.tensor(in.out_b, "out_b", KVCHECK_F32, {n, nh, hd}, {-1, hd, 1}));
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {n, nh, hd}, {-1, hd, 1}));
  SharedStride rows;
  rows.take(r, in.out_a, "out_a");
  rows.take(r, in.out_b, "out_b");
  rows.take(r, in.out, "out");
  o.row_stride = rows.value;
  o.lse_a = as<const float>(r.tensor(in.lse_a, "lse_a", KVCHECK_F32, {n, nh}, {nh, 1}));
  o.lse_b = as<const float>(r.tensor(in.lse_b, "lse_b", KVCHECK_F32, {n, nh}, {nh, 1}));
  o.lse = as<float>(r.tensor(in.lse_out, "lse_out", KVCHECK_F32, {n, nh}, {nh, 1}));
  o.num_rows = n;
  o.num_merge = r.count("num_merge", in.num_merge);
  o.num_heads = in.num_heads;
  o.head_dim = in.head_dim;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_fill_blocks_args& in, FillBlocksArgs* out) {
  AbiReader r("fill_blocks");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  FillBlocksArgs o;
  o.cache = r.cache(in.cache);
  o.num_ids = r.count("num_ids", in.num_ids);
  o.block_ids =
      as<const int32_t>(r.tensor(in.block_ids, "block_ids", KVCHECK_I32, {o.num_ids}, {1}));
  if (in.pattern < KVCHECK_FILL_ZERO || in.pattern > KVCHECK_FILL_RANDOM_BITS)
    r.fail("pattern", std::to_string(in.pattern) + " is not a kvcheck_fill_pattern");
  o.pattern = static_cast<FillPattern>(in.pattern);
  o.seed = in.seed;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_linear_attention_args& in, LinearAttnArgs* out) {
  AbiReader r("linear_attention");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  LinearAttnArgs o;
  const int32_t n = r.count("num_seqs", in.num_seqs);
  const int64_t nh = in.num_heads, d = in.head_dim;
  o.state = as<float>(r.tensor(in.state, "state", KVCHECK_F32, {-1, nh, d, d}, {-1, d * d, d, 1}));
  o.state_block_stride = outer_stride(in.state);
  o.q = as<const float>(r.tensor(in.q, "q", KVCHECK_F32, {-1, nh, d}, {-1, d, 1}));
  o.k = as<const float>(r.tensor(in.k, "k", KVCHECK_F32, {-1, nh, d}, {-1, d, 1}));
  o.v = as<const float>(r.tensor(in.v, "v", KVCHECK_F32, {-1, nh, d}, {-1, d, 1}));
  SharedStride qkv;
  qkv.take(r, in.q, "q");
  qkv.take(r, in.k, "k");
  qkv.take(r, in.v, "v");
  o.qkv_row_stride = qkv.value;
  o.gate = as<const float>(r.tensor(in.gate, "gate", KVCHECK_F32, {-1, nh}, {-1, 1}));
  o.gate_row_stride = outer_stride(in.gate);
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {-1, nh, d}, {-1, d, 1}));
  o.out_row_stride = outer_stride(in.out);
  o.seq_starts =
      as<const int32_t>(r.tensor(in.seq_starts, "seq_starts", KVCHECK_I32, {n + 1}, {1}));
  o.state_blocks =
      as<const int32_t>(r.tensor(in.state_blocks, "state_blocks", KVCHECK_I32, {n}, {1}));
  o.has_initial_state = as<const int32_t>(
      r.tensor(in.has_initial_state, "has_initial_state", KVCHECK_I32, {n}, {1}));
  o.num_seqs = n;
  o.num_heads = in.num_heads;
  o.head_dim = in.head_dim;
  o.scale = in.scale;
  // The counts the tensors were built with (the ops read the arrays).
  o.num_rows = in.q.dl.ndim > 0 ? static_cast<int32_t>(in.q.dl.shape[0]) : 0;
  o.state_blocks_total = in.state.dl.ndim > 0 ? static_cast<int32_t>(in.state.dl.shape[0]) : 0;
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_quant_fp8_args& in, QuantFp8Args* out) {
  AbiReader r("quant_fp8");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  QuantFp8Args o;
  const int32_t n = r.count("num_rows", in.num_rows);
  const int32_t cols = r.count("cols", in.cols);
  o.x = as<const float>(r.tensor(in.x, "x", KVCHECK_F32, {n, cols}, {-1, 1}));
  o.y = as<float>(r.tensor(in.y, "y", KVCHECK_F32, {n, cols}, {-1, 1}));
  SharedStride rows;
  rows.take(r, in.x, "x");
  rows.take(r, in.y, "y");
  o.row_stride = rows.value;
  o.cols = cols;
  o.num_rows = n;
  o.amax_rows = as<const int32_t>(r.tensor(in.amax_rows, "amax_rows", KVCHECK_I32, {1}, {1}));
  o.amax_rows_fixed = in.amax_rows_fixed;
  o.scale_out = as<float>(r.tensor(in.scale_out, "scale_out", KVCHECK_F32, {1}, {1}));
  if (r.ok()) *out = o;
  return done(r);
}

std::string from_abi(const kvcheck_paged_prefill_args& in, PagedPrefillArgs* out) {
  AbiReader r("paged_prefill");
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return done(r);
  PagedPrefillArgs o;
  o.cache = r.cache(in.cache);
  const int32_t n = r.count("num_seqs", in.num_seqs);
  const int32_t nq = r.count("num_q_heads", in.num_q_heads);
  const int64_t hd = in.cache.head_dim;
  const int64_t vd = in.v_dim == 0 ? hd : in.v_dim;
  o.q = as<const float>(r.tensor(in.q, "q", KVCHECK_F32, {-1, nq, hd}, {-1, hd, 1}));
  o.q_row_stride = outer_stride(in.q);
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {-1, nq, vd}, {-1, vd, 1}));
  o.out_row_stride = outer_stride(in.out);
  o.lse = as<float>(r.tensor(in.lse, "lse", KVCHECK_F32, {-1, nq}, {nq, 1}));
  o.q_starts = as<const int32_t>(r.tensor(in.q_starts, "q_starts", KVCHECK_I32, {n + 1}, {1}));
  o.ctx_lens = as<const int32_t>(r.tensor(in.ctx_lens, "ctx_lens", KVCHECK_I32, {n}, {1}));
  o.block_table = as<const int32_t>(
      r.tensor(in.block_table, "block_table", KVCHECK_I32, {n, -1}, {-1, 1}));
  o.block_table_stride = static_cast<int32_t>(outer_stride(in.block_table));
  o.workspace_bytes = r.bytes(in.workspace, "workspace");
  o.workspace = r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1});
  o.num_seqs = n;
  o.num_rows = in.q.dl.ndim > 0 ? static_cast<int32_t>(in.q.dl.shape[0]) : 0;
  o.num_q_heads = nq;
  o.v_dim = in.v_dim;
  o.scale = in.scale;
  o.max_q_len = in.max_q_len;
  o.max_ctx_len = in.max_ctx_len;
  o.q_starts_host = in.q_starts_host;
  o.ctx_lens_host = in.ctx_lens_host;
  if (r.ok()) *out = o;
  return done(r);
}

}  // namespace kv::backend
