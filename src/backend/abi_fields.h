// abi_fields.h — the fields an op's ABI args (include/kvcheck/backend.h) and kvcheck's descriptor
// (kernels/op_args.cuh) share, name for name and value for value, each list written once and
// copied to <- from by one function either way round: AbiBuilder copies kvcheck -> ABI
// (abi_convert.cpp), from_abi ABI -> kvcheck (abi_from.cpp, abi_tensor.cpp). A field either side
// converts, counts or derives is not in a list.
#pragma once

// The lists: F(field) for each shared field.
#define KV_CACHE_FIELDS(F)                                                                         \
  F(num_blocks) F(block_size) F(num_kv_heads) F(head_dim) F(k_scale) F(v_scale)
#define KV_PLAN_FIELDS(F)                                                                          \
  F(seq_lens_host) F(num_rows) F(num_q_heads) F(num_kv_heads) F(head_dim) F(v_dim)                 \
  F(block_size) F(max_splits) F(max_blocks_per_seq)
#define KV_VARLEN_FIELDS(F)                                                                        \
  F(num_seqs) F(num_q_heads) F(num_kv_heads) F(head_dim) F(scale) F(k_scale) F(v_scale)            \
  F(max_q_len) F(max_k_len) F(q_starts_host) F(k_starts_host)
#define KV_PREFILL_FIELDS(F)                                                                       \
  F(num_seqs) F(num_q_heads) F(v_dim) F(scale) F(max_q_len) F(max_ctx_len) F(q_starts_host)        \
  F(ctx_lens_host)
#define KV_COPY_FIELD(field) to.field = from.field;

namespace kv::backend {

// The paged cache (kvcheck_paged_kv, PagedKv): its shape and fp8 scales.
template <class To, class From>
void copy_cache_fields(To& to, const From& from) { KV_CACHE_FIELDS(KV_COPY_FIELD) }
// The decode plan step (kvcheck_decode_plan_args, DecodePlanArgs).
template <class To, class From>
void copy_plan_fields(To& to, const From& from) { KV_PLAN_FIELDS(KV_COPY_FIELD) }
// varlen_attention (kvcheck_varlen_attention_args, VarlenAttnArgs).
template <class To, class From>
void copy_varlen_fields(To& to, const From& from) { KV_VARLEN_FIELDS(KV_COPY_FIELD) }
// paged_prefill (kvcheck_paged_prefill_args, PagedPrefillArgs).
template <class To, class From>
void copy_prefill_fields(To& to, const From& from) { KV_PREFILL_FIELDS(KV_COPY_FIELD) }

}  // namespace kv::backend

#undef KV_COPY_FIELD
#undef KV_PREFILL_FIELDS
#undef KV_VARLEN_FIELDS
#undef KV_PLAN_FIELDS
#undef KV_CACHE_FIELDS
