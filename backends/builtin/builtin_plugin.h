// builtin_plugin.h — what kvcheck's own ops share as plugins (host_backend.cpp, cuda_backend.cu,
// and the test plugins built over the host ops: tests/mutants): the error buffer, an op run that
// no exception leaves, the caps of kvcheck's own ops, the decode plan, and the checks of init's
// arguments. Their op table is builtin_table.h's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "kernels/attn_state.cuh"
#include "kernels/decode_splits.h"
#include "kvcheck/backend.h"

namespace kv::builtin_plugin {

// `msg` into the caller's buffer, cut to fit and NUL-terminated.
inline void put_error(char* err, size_t err_size, const std::string& msg) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(msg.size(), err_size - 1);
  memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// An exception's message from op `op`, prefixed with the op's name unless it names it already
// (kvcheck's ops start their messages with it).
inline std::string op_message(const char* op, const std::string& what) {
  return what.find(op) != std::string::npos ? what : std::string(op) + ": " + what;
}

// Runs one op's body(args), which returns "" or why it failed; exceptions become the message too.
template <class Args, class Body>
int32_t run_op(const char* op, const Args* a, char* err, size_t err_size, Body body) {
  try {
    const std::string why = a ? body(*a) : std::string(op) + ": args is NULL";
    if (why.empty()) return KVCHECK_OK;
    put_error(err, err_size, why);
  } catch (const std::exception& e) {
    put_error(err, err_size, op_message(op, e.what()));
  } catch (...) {
    put_error(err, err_size, std::string(op) + ": unknown exception");
  }
  return KVCHECK_ERROR;
}

// What kvcheck's own ops take: every cache dtype and layout, any head dim and block size; and
// kvcheck's conventions: f32 io, natural lse, -inf for an empty row, padded rows seq_len 0 and
// block 0, no zeroing needed, graphs of every step.
inline kvcheck_caps builtin_caps() {
  kvcheck_caps c{};
  c.struct_size = sizeof(c);
  c.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_F32) | KVCHECK_DTYPE_BIT(KVCHECK_F16) |
                   KVCHECK_DTYPE_BIT(KVCHECK_BF16) | KVCHECK_DTYPE_BIT(KVCHECK_FP8_E4M3);
  c.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_SEPARATE) |
              KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_INTERLEAVED) |
              KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  c.io_dtype = KVCHECK_F32;
  c.head_dims = nullptr;  // any
  c.block_sizes = nullptr;
  c.lse_base = KVCHECK_LSE_NATURAL;
  c.empty_row_lse = -INFINITY;
  c.pad_seq_len = 0;
  c.pad_block_id = 0;
  c.needs_zeroed_blocks = 0;
  c.graph_support = KVCHECK_GRAPHS_FULL;
  return c;
}

// The decode plan step's args converted, checked and planned by kvcheck's built-in planner: the
// plan to copy into args->plan, or why not (`why` set).
inline std::vector<int32_t> builtin_plan(const kvcheck_decode_plan_args& in, DecodePlanArgs* d,
                                         std::string* why) {
  *why = backend::from_abi(in, d);
  if (!why->empty()) return {};
  const size_t need = decode_plan_bytes(d->num_rows);
  if (d->plan == nullptr || d->plan_bytes < need)
    *why = "paged_decode_plan: plan: " + std::to_string(d->plan_bytes) + " bytes, the plan of " +
           std::to_string(d->num_rows) + " rows takes " + std::to_string(need) + " (plan_bytes)";
  else if (d->block_size < 1 || d->max_splits < 1)
    *why = "paged_decode_plan: block_size " + std::to_string(d->block_size) + " and max_splits " +
           std::to_string(d->max_splits) + " must be positive";
  else if (d->num_rows > 0 && d->seq_lens_host == nullptr)
    *why = "paged_decode_plan: seq_lens_host is NULL";
  if (!why->empty()) return {};
  const std::vector<int32_t> lens(d->seq_lens_host, d->seq_lens_host + d->num_rows);
  return plan_decode_splits_for(d->cache_dtype, lens, d->block_size, d->max_splits);
}

// The plan and workspace sizes of kvcheck's built-in decode.
inline size_t builtin_plan_bytes(void*, const kvcheck_size_query* q) {
  return decode_plan_bytes(std::max(q->max_rows, 0));
}
inline size_t builtin_workspace_bytes(void*, const kvcheck_size_query* q) {
  if (q->op != KVCHECK_OP_PAGED_DECODE) return 0;
  return decode_workspace_bytes(std::max(q->max_rows, 0), std::max(q->num_q_heads, 0),
                                std::max(q->v_dim, 0), std::max(q->max_splits, 0));
}

// A table of kvcheck's own ops' caps and plan/workspace sizes; the caller sets the ops.
inline kvcheck_backend builtin_table(const char* name, const char* version, void* self) {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  b.name = name;
  b.version = version;
  b.self = self;
  b.caps = builtin_caps();
  b.plan_bytes = builtin_plan_bytes;
  b.workspace_bytes = builtin_workspace_bytes;
  return b;
}

// Why a plugin named `name` that runs on device type `runs_on` and takes no options cannot serve
// init's request, or "". `other` names the plugin for the other device type, for the message.
inline std::string init_refusal(const char* name, uint32_t abi_version, const kvcheck_host* host,
                                DLDeviceType runs_on, const char* other) {
  const std::string me = std::string(name) + ": ";
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION)
    return me + "ABI version " + std::to_string(abi_version) + " asked, this backend speaks " +
           std::to_string(KVCHECK_BACKEND_ABI_VERSION);
  if (host == nullptr || host->struct_size < offsetof(kvcheck_host, options) + sizeof(char*))
    return me + "kvcheck_host is NULL or shorter than its v1 fields";
  const DLDevice d = host->device;
  const char* type = d.device_type == kDLCPU ? " (kDLCPU)" : d.device_type == kDLCUDA ? " (kDLCUDA)"
                                                                                    : "";
  if (d.device_type != runs_on)
    return me + "runs on " + (runs_on == kDLCPU ? "the host (kDLCPU)" : "a CUDA GPU (kDLCUDA)") +
           " only, asked for device type " + std::to_string(d.device_type) + type + " id " +
           std::to_string(d.device_id) + "; " + other;
  if (d.device_id < 0)
    return me + "device id " + std::to_string(d.device_id) + " is not a device ordinal";
  if (host->options != nullptr && host->options[0] != '\0')
    return me + "takes no options, got \"" + host->options + "\"";
  return "";
}

// The optional lse of paged_decode from host memory: each row's split states folded as the host
// op folds them (a padded row: untouched, as its output).
inline void host_decode_lse(const PagedDecodeArgs& d, float* lse) {
  for (int32_t row = 0; row < d.num_rows; ++row) {
    if (d.seq_lens[row] <= 0) continue;
    const int32_t splits = d.split_meta[kDecodeMetaHeader + row];
    for (int32_t h = 0; h < d.num_q_heads; ++h) {
      float l = -INFINITY;
      for (int32_t s = 0; s < splits; ++s) {
        const int64_t idx = (static_cast<int64_t>(row) * d.max_splits + s) * d.num_q_heads + h;
        l = merge_weights(l, d.partial_lse[idx]).lse;
      }
      lse[static_cast<int64_t>(row) * d.num_q_heads + h] = l;
    }
  }
}

}  // namespace kv::builtin_plugin
