// abi_from.cpp — ABI -> kvcheck: from_abi (abi_convert.h), the inverse of AbiBuilder. Each
// function reads through an AbiReader, which keeps the first mismatch; *out is written only when
// everything matched. Where kvcheck's descriptor has one stride for several tensors (varlen K and
// V, merge_states' three outputs, linear attention's q/k/v) the tensors must agree on it.
#include <string>

#include "backend/abi_convert.h"
#include "backend/abi_fields.h"
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

// Reads one call's args `in` of op `op` into *out through read(r, o): "" or the first mismatch;
// *out is written only when everything matched.
template <class In, class Desc, class Read>
std::string read_args(const char* op, const In& in, Desc* out, Read read) {
  AbiReader r(op);
  if (!r.struct_size("args", in.struct_size, sizeof(in))) return r.error();
  Desc o;
  read(r, o);
  if (r.ok()) *out = o;
  return r.error();
}

// q [rows][heads][head_dim], out [rows][heads][v_dim] and the optional lse [rows][heads] of an
// attention call over the paged cache (rows -1: any); returns the lse.
template <class In, class Desc>
float* read_attention_rows(AbiReader& r, const In& in, Desc& o, int64_t rows, int64_t heads) {
  const int64_t hd = in.cache.head_dim, vd = in.v_dim == 0 ? hd : in.v_dim;
  o.q = as<const float>(r.tensor(in.q, "q", KVCHECK_F32, {rows, heads, hd}, {-1, hd, 1}));
  o.q_row_stride = outer_stride(in.q);
  o.out = as<float>(r.tensor(in.out, "out", KVCHECK_F32, {rows, heads, vd}, {-1, vd, 1}));
  o.out_row_stride = outer_stride(in.out);
  return as<float>(r.tensor(in.lse, "lse", KVCHECK_F32, {rows, heads}, {heads, 1}));
}

}  // namespace

std::string from_abi(const kvcheck_write_kv_args& in, WriteKvArgs* out) {
  return read_args(op_name(KVCHECK_OP_WRITE_KV), in, out, [&](AbiReader& r, WriteKvArgs& o) {
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
  });
}

std::string from_abi(const kvcheck_paged_decode_args& in, PagedDecodeArgs* out, float** lse) {
  return read_args(op_name(KVCHECK_OP_PAGED_DECODE), in, out,
                   [&](AbiReader& r, PagedDecodeArgs& o) {
    o.cache = r.cache(in.cache);
    const int32_t n = r.count("num_rows", in.num_rows);
    const int32_t nq = r.count("num_q_heads", in.num_q_heads);
    const int64_t vd = in.v_dim == 0 ? in.cache.head_dim : in.v_dim;
    float* lse_data = read_attention_rows(r, in, o, n, nq);
    if (lse) *lse = lse_data;
    o.block_table = as<const int32_t>(
        r.tensor(in.block_table, "block_table", KVCHECK_I32, {n, -1}, {-1, 1}));
    o.block_table_stride = static_cast<int32_t>(outer_stride(in.block_table));
    o.seq_lens = as<const int32_t>(r.tensor(in.seq_lens, "seq_lens", KVCHECK_I32, {n}, {1}));
    // The plan in kvcheck's format (kDecodeMetaHeader): a header and one count per row.
    const size_t plan_bytes = r.bytes(in.plan, "plan");
    if (in.plan.dl.data && plan_bytes < decode_plan_bytes(n))
      r.fail("plan", std::to_string(plan_bytes) + " bytes, kvcheck's plan of " + std::to_string(n) +
                         " rows takes " + std::to_string(decode_plan_bytes(n)));
    o.split_meta = as<const int32_t>(r.tensor(in.plan, "plan", KVCHECK_U8, {-1}, {1}));
    // The workspace as kvcheck's decode lays it out for max_splits splits (as many as its bytes
    // hold when the args do not say).
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
  });
}

std::string from_abi(const kvcheck_decode_plan_args& in, DecodePlanArgs* out) {
  return read_args("paged_decode_plan", in, out, [&](AbiReader& r, DecodePlanArgs& o) {
    copy_plan_fields(o, in);
    r.count("num_rows", in.num_rows);
    o.cache_dtype = r.cache_dtype("cache_dtype", in.cache_dtype);
    o.plan_bytes = r.bytes(in.plan, "plan");
    o.plan = as<int32_t>(r.tensor(in.plan, "plan", KVCHECK_U8, {-1}, {1}));
    o.latent = in.layout == KVCHECK_LAYOUT_MLA_LATENT;
    o.interleaved = in.layout == KVCHECK_LAYOUT_KV_INTERLEAVED;
  });
}

std::string from_abi(const kvcheck_gather_kv_args& in, GatherKvArgs* out) {
  return read_args(op_name(KVCHECK_OP_GATHER_KV), in, out, [&](AbiReader& r, GatherKvArgs& o) {
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
  });
}

std::string from_abi(const kvcheck_varlen_attention_args& in, VarlenAttnArgs* out) {
  return read_args(op_name(KVCHECK_OP_VARLEN_ATTENTION), in, out,
                   [&](AbiReader& r, VarlenAttnArgs& o) {
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
    copy_varlen_fields(o, in);
    o.v_dim = in.v_dim;
    o.causal = in.causal != 0;
    o.kv_dtype = r.cache_dtype("kv_dtype", in.kv_dtype);
    // The row counts the tensors were built with (the ops read the starts arrays).
    o.num_rows = in.q.dl.ndim > 0 ? static_cast<int32_t>(in.q.dl.shape[0]) : 0;
    o.num_keys = in.k.dl.ndim > 0 ? static_cast<int32_t>(in.k.dl.shape[0]) : 0;
    o.workspace_bytes = r.bytes(in.workspace, "workspace");
    o.workspace = r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1});
  });
}

std::string from_abi(const kvcheck_merge_states_args& in, MergeStatesArgs* out) {
  return read_args(op_name(KVCHECK_OP_MERGE_STATES), in, out,
                   [&](AbiReader& r, MergeStatesArgs& o) {
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
  });
}

std::string from_abi(const kvcheck_fill_blocks_args& in, FillBlocksArgs* out) {
  return read_args(op_name(KVCHECK_OP_FILL_BLOCKS), in, out, [&](AbiReader& r, FillBlocksArgs& o) {
    o.cache = r.cache(in.cache);
    o.num_ids = r.count("num_ids", in.num_ids);
    o.block_ids =
        as<const int32_t>(r.tensor(in.block_ids, "block_ids", KVCHECK_I32, {o.num_ids}, {1}));
    if (in.pattern < KVCHECK_FILL_ZERO || in.pattern > KVCHECK_FILL_RANDOM_BITS)
      r.fail("pattern", std::to_string(in.pattern) + " is not a kvcheck_fill_pattern");
    o.pattern = static_cast<FillPattern>(in.pattern);
    o.seed = in.seed;
  });
}

std::string from_abi(const kvcheck_linear_attention_args& in, LinearAttnArgs* out) {
  return read_args(op_name(KVCHECK_OP_LINEAR_ATTENTION), in, out,
                   [&](AbiReader& r, LinearAttnArgs& o) {
    const int32_t n = r.count("num_seqs", in.num_seqs);
    const int64_t nh = in.num_heads, d = in.head_dim;
    o.state =
        as<float>(r.tensor(in.state, "state", KVCHECK_F32, {-1, nh, d, d}, {-1, d * d, d, 1}));
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
  });
}

std::string from_abi(const kvcheck_quant_fp8_args& in, QuantFp8Args* out) {
  return read_args(op_name(KVCHECK_OP_QUANT_FP8), in, out, [&](AbiReader& r, QuantFp8Args& o) {
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
  });
}

std::string from_abi(const kvcheck_paged_prefill_args& in, PagedPrefillArgs* out) {
  return read_args(op_name(KVCHECK_OP_PAGED_PREFILL), in, out,
                   [&](AbiReader& r, PagedPrefillArgs& o) {
    o.cache = r.cache(in.cache);
    const int32_t n = r.count("num_seqs", in.num_seqs);
    const int32_t nq = r.count("num_q_heads", in.num_q_heads);
    o.lse = read_attention_rows(r, in, o, -1, nq);
    o.q_starts = as<const int32_t>(r.tensor(in.q_starts, "q_starts", KVCHECK_I32, {n + 1}, {1}));
    o.ctx_lens = as<const int32_t>(r.tensor(in.ctx_lens, "ctx_lens", KVCHECK_I32, {n}, {1}));
    o.block_table = as<const int32_t>(
        r.tensor(in.block_table, "block_table", KVCHECK_I32, {n, -1}, {-1, 1}));
    o.block_table_stride = static_cast<int32_t>(outer_stride(in.block_table));
    o.workspace_bytes = r.bytes(in.workspace, "workspace");
    o.workspace = r.tensor(in.workspace, "workspace", KVCHECK_U8, {-1}, {1});
    copy_prefill_fields(o, in);
    o.num_rows = in.q.dl.ndim > 0 ? static_cast<int32_t>(in.q.dl.shape[0]) : 0;
  });
}

}  // namespace kv::backend
