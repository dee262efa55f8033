// abi_convert.h — kvcheck's op descriptors (kernels/op_args.cuh) to and from the plugin ABI's
// argument structs (include/kvcheck/backend.h).
//
//   kvcheck -> ABI: AbiBuilder, used by kvcheck to call a plugin. It fills the kvcheck_*_args of
//     one call from the op's descriptor; the DLTensors' shape and strides live in the builder
//     (fixed arrays, nothing allocated per call) until its next call.
//   ABI -> kvcheck: from_abi, used by plugins written in C++ over kvcheck's own kernels (the
//     built-in plugins). It checks what it can and returns "" or a one-line message; it never
//     throws.
//
// op_args -> ABI -> op_args gives back the same descriptor, field for field, with two
// normalisations: a v_dim of 0 ("head_dim") comes back as head_dim, and GatherKvArgs has no
// assume_contiguous here (the seed-004 bug lives in the engine, not in an op's arguments).
//
// Some extents of the ABI's tensor shapes live only in device memory on kvcheck's side (the row
// count behind q_starts, the context total behind ctx_starts): the builder takes them from the
// caller, which knows them from its step plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/abi_tensor.h"
#include "kernels/decode_splits.h"
#include "kernels/op_args.cuh"

namespace kv::backend {

// The plan and workspace a paged_decode call hands the backend, and its optional lse output.
// Left NULL, the plan is the descriptor's split_meta (decode_plan_bytes(num_rows) bytes) and the
// workspace its partial_out, which partial_lse must then follow (decode_workspace_bytes).
struct DecodeBuffers {
  void* plan = nullptr;
  size_t plan_bytes = 0;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  float* lse = nullptr;  // [num_rows][num_q_heads]
};

// ---- kvcheck -> ABI ---------------------------------------------------------------------------

// Where the data of a descriptor's pointers lives for the plugin, when not at those addresses:
// `kvcheck conform` builds its descriptors over host memory and hands a CUDA plugin device copies.
// to_device(nullptr) is nullptr.
class PointerMap {
 public:
  virtual const void* to_device(const void* p) const = 0;

 protected:
  ~PointerMap() = default;
};

// Builds the ABI args of kvcheck's calls into a plugin on one device (kDLCPU, or kDLCUDA and the
// GPU's id). q / out tensors are f32: the caller converts when the backend's io_dtype differs.
// Each call's tensors are valid until the next call on the same builder. With a PointerMap, every
// tensor's data is the map's address for the descriptor's (host-side values such as
// DecodePlanArgs::seq_lens_host stay as they are). Throws std::invalid_argument only for a
// descriptor that breaks its own contract (DecodeBuffers).
class AbiBuilder {
 public:
  explicit AbiBuilder(DLDevice device, const PointerMap* map = nullptr)
      : device_(device), map_(map) {}
  DLDevice device() const { return device_; }

  kvcheck_write_kv_args write_kv(const WriteKvArgs& a);
  kvcheck_paged_decode_args paged_decode(const PagedDecodeArgs& a, const DecodeBuffers& b = {});
  kvcheck_decode_plan_args decode_plan(const DecodePlanArgs& a);
  // total_ctx: rows of k_out / v_out (ctx_starts[num_seqs]).
  kvcheck_gather_kv_args gather_kv(const GatherKvArgs& a, int32_t total_ctx);
  // rows: q_starts[num_seqs]; keys: k_starts[num_seqs].
  kvcheck_varlen_attention_args varlen_attention(const VarlenAttnArgs& a, int32_t rows,
                                                 int32_t keys);
  kvcheck_merge_states_args merge_states(const MergeStatesArgs& a);
  kvcheck_fill_blocks_args fill_blocks(const FillBlocksArgs& a);
  // rows: seq_starts[num_seqs]; state_blocks: blocks of the state tensor.
  kvcheck_linear_attention_args linear_attention(const LinearAttnArgs& a, int32_t rows,
                                                 int32_t state_blocks);
  kvcheck_quant_fp8_args quant_fp8(const QuantFp8Args& a);
  kvcheck_paged_prefill_args paged_prefill(const PagedPrefillArgs& a);

 private:
  // The args struct of one call: zeroed, its struct_size set; the call's tensors start afresh.
  template <class R>
  R start() {
    pool_.reset();
    R r{};
    r.struct_size = sizeof(r);
    return r;
  }
  void cache(kvcheck_paged_kv& r, const PagedKv& c);
  // q [n][heads][head_dim], out [n][heads][v_dim] and lse [n][heads] of an attention call over
  // the paged cache (paged_decode, paged_prefill).
  template <class R, class A>
  void attention_rows(R& r, const A& a, int32_t n, const float* lse) {
    const int32_t nq = a.num_q_heads, hd = a.cache.head_dim, vd = a.v_dim == 0 ? hd : a.v_dim;
    rows(r.q, a.q, KVCHECK_F32, n, nq, hd, a.q_row_stride);
    rows(r.out, a.out, KVCHECK_F32, n, nq, vd, a.out_row_stride);
    view(r.lse, lse, KVCHECK_F32, {n, nq}, {nq, 1});
  }
  void view(kvcheck_tensor& t, const void* data, int32_t dtype,
            std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides) {
    pool_.view(t, map_ && data ? map_->to_device(data) : data, dtype, device_, shape, strides);
  }
  // Rows [rows][heads][feats], heads packed.
  void rows(kvcheck_tensor& t, const void* data, int32_t dtype, int64_t rows, int64_t heads,
            int64_t feats, int64_t row_stride) {
    view(t, data, dtype, {rows, heads, feats}, {row_stride, feats, 1});
  }
  void array(kvcheck_tensor& t, const void* data, int32_t dtype, int64_t n) {
    view(t, data, dtype, {n}, {1});
  }

  DLDevice device_;
  const PointerMap* map_;
  TensorPool<12> pool_;  // the most tensors of one op: paged_decode's 9, linear_attention's 9
};

// The layout a decode plan's shape serves.
kvcheck_kv_layout layout_of(const DecodePlanArgs& a);
// What plan_bytes / workspace_bytes are asked: paged_decode for a run's decode steps of one layer
// kind (their shape as a plan's args, num_rows the most rows), paged_prefill for one call.
kvcheck_size_query size_query(const DecodePlanArgs& shape);
kvcheck_size_query size_query(const PagedPrefillArgs& call);
kvcheck_size_query size_query(const WriteKvArgs& call);
kvcheck_size_query size_query(const VarlenAttnArgs& call);

// ---- ABI -> kvcheck ---------------------------------------------------------------------------

// Each fills *out from the ABI args and returns "", or returns "op: what: why" at the first
// mismatch (struct_size below the v1 size, ndim, dtype, an innermost stride other than 1, a shape
// or stride kvcheck's descriptor cannot express).
std::string from_abi(const kvcheck_write_kv_args& in, WriteKvArgs* out);
// The workspace is carved as decode_workspace_bytes lays it out, max_splits being the most its
// bytes hold for num_rows rows. *lse (when lse is given) receives the optional lse output.
std::string from_abi(const kvcheck_paged_decode_args& in, PagedDecodeArgs* out,
                     float** lse = nullptr);
std::string from_abi(const kvcheck_decode_plan_args& in, DecodePlanArgs* out);
std::string from_abi(const kvcheck_gather_kv_args& in, GatherKvArgs* out);
std::string from_abi(const kvcheck_varlen_attention_args& in, VarlenAttnArgs* out);
std::string from_abi(const kvcheck_merge_states_args& in, MergeStatesArgs* out);
std::string from_abi(const kvcheck_fill_blocks_args& in, FillBlocksArgs* out);
std::string from_abi(const kvcheck_linear_attention_args& in, LinearAttnArgs* out);
std::string from_abi(const kvcheck_quant_fp8_args& in, QuantFp8Args* out);
std::string from_abi(const kvcheck_paged_prefill_args& in, PagedPrefillArgs* out);

}  // namespace kv::backend
