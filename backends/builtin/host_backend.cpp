// host_backend.cpp — kvcheck's built-in host ops (kernels/host) as a backend plugin:
// libkvcheck_backend_host.so, name "builtin-host".
//
// Every op of the table but paged_prefill converts its ABI args back into kvcheck's descriptor
// (from_abi, src/backend/abi_convert.h) and runs the kv::host op on it, so through the ABI it
// computes bit for bit what kvcheck's host device computes; tests/backend holds it to that. The
// decode plan is the built-in planner's (plan_decode_splits_for), written into the plan buffer
// (host memory on the host); paged_decode carves kvcheck's partial_out / partial_lse out of the
// workspace it declared. Runs on kDLCPU only. No exception leaves an op: each becomes KVCHECK_ERROR
// with its message.
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
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"
#include "report/version.h"

namespace {

using namespace kv;

constexpr const char* kName = "builtin-host";

void put_error(char* err, size_t err_size, const std::string& msg) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(msg.size(), err_size - 1);
  memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Runs one op's body, which returns "" or why it failed; exceptions become the message too.
template <class Args, class Body>
int32_t run_op(const char* op, const Args* a, char* err, size_t err_size, Body body) {
  try {
    const std::string why = a ? body(*a) : std::string(op) + ": args is NULL";
    if (why.empty()) return KVCHECK_OK;
    put_error(err, err_size, why);
  } catch (const std::exception& e) {
    const std::string what = e.what();  // kv::host's messages start with the op's name
    put_error(err, err_size, what.rfind(op, 0) == 0 ? what : std::string(op) + ": " + what);
  } catch (...) {
    put_error(err, err_size, std::string(op) + ": unknown exception");
  }
  return KVCHECK_ERROR;
}

// An op that is its kvcheck descriptor handed to the kv::host op as it is.
template <class Desc, class Args>
int32_t convert_and_run(const char* op, const Args* a, char* err, size_t err_size,
                        void (*host_op)(const Desc&)) {
  return run_op(op, a, err, err_size, [&](const Args& in) {
    Desc d;
    std::string why = backend::from_abi(in, &d);
    if (why.empty()) host_op(d);
    return why;
  });
}

// ---- ops ----------------------------------------------------------------------------------

int32_t write_kv(void*, const kvcheck_write_kv_args* a, void*, char* err, size_t n) {
  return convert_and_run<WriteKvArgs>("write_kv", a, err, n, host::write_kv);
}

int32_t gather_kv(void*, const kvcheck_gather_kv_args* a, void*, char* err, size_t n) {
  return convert_and_run<GatherKvArgs>("gather_kv", a, err, n, host::gather_kv);
}

int32_t varlen_attention(void*, const kvcheck_varlen_attention_args* a, void*, char* err,
                         size_t n) {
  return convert_and_run<VarlenAttnArgs>("varlen_attention", a, err, n, host::varlen_attention);
}

int32_t merge_states(void*, const kvcheck_merge_states_args* a, void*, char* err, size_t n) {
  return convert_and_run<MergeStatesArgs>("merge_states", a, err, n, host::merge_states);
}

int32_t linear_attention(void*, const kvcheck_linear_attention_args* a, void*, char* err,
                         size_t n) {
  return convert_and_run<LinearAttnArgs>("linear_attention", a, err, n, host::linear_attention);
}

int32_t fill_blocks(void*, const kvcheck_fill_blocks_args* a, void*, char* err, size_t n) {
  return convert_and_run<FillBlocksArgs>("fill_blocks", a, err, n, host::fill_blocks);
}

int32_t quant_fp8(void*, const kvcheck_quant_fp8_args* a, void*, char* err, size_t n) {
  return convert_and_run<QuantFp8Args>("quant_fp8", a, err, n, host::quant_fp8);
}

// The optional lse of paged_decode: the row's split states folded as the op folds them.
void decode_lse(const PagedDecodeArgs& d, float* lse) {
  for (int32_t row = 0; row < d.num_rows; ++row) {
    if (d.seq_lens[row] <= 0) continue;  // a padded row: untouched, as its output
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

int32_t paged_decode(void*, const kvcheck_paged_decode_args* a, void*, char* err, size_t n) {
  return run_op("paged_decode", a, err, n, [](const kvcheck_paged_decode_args& in) {
    PagedDecodeArgs d;
    float* lse = nullptr;
    std::string why = backend::from_abi(in, &d, &lse);
    if (!why.empty()) return why;
    if (d.num_rows > 0 && d.split_meta == nullptr)
      return std::string("paged_decode: plan: absent; builtin-host reads the split plan that "
                         "paged_decode_plan wrote there");
    if (d.num_rows > 0 && d.partial_out == nullptr)
      return std::string("paged_decode: workspace: absent; builtin-host needs "
                         "workspace_bytes(KVCHECK_OP_PAGED_DECODE) bytes");
    host::paged_decode(d);
    if (lse) decode_lse(d, lse);
    return std::string();
  });
}

int32_t paged_decode_plan(void*, const kvcheck_decode_plan_args* a, void*, char* err, size_t n) {
  return run_op("paged_decode_plan", a, err, n, [](const kvcheck_decode_plan_args& in) {
    DecodePlanArgs d;
    std::string why = backend::from_abi(in, &d);
    if (!why.empty()) return why;
    const size_t need = decode_plan_bytes(d.num_rows);
    if (d.plan == nullptr || d.plan_bytes < need)
      return "paged_decode_plan: plan: " + std::to_string(d.plan_bytes) + " bytes, the plan of " +
             std::to_string(d.num_rows) + " rows takes " + std::to_string(need) +
             " (plan_bytes)";
    if (d.block_size < 1 || d.max_splits < 1)
      return "paged_decode_plan: block_size " + std::to_string(d.block_size) + " and max_splits " +
             std::to_string(d.max_splits) + " must be positive";
    if (d.num_rows > 0 && d.seq_lens_host == nullptr)
      return std::string("paged_decode_plan: seq_lens_host is NULL");
    const std::vector<int32_t> lens(d.seq_lens_host, d.seq_lens_host + d.num_rows);
    const std::vector<int32_t> plan =
        plan_decode_splits_for(d.cache_dtype, lens, d.block_size, d.max_splits);
    memcpy(d.plan, plan.data(), plan.size() * sizeof(int32_t));  // host memory on the host
    return std::string();
  });
}

size_t plan_bytes(void*, int32_t max_rows, int32_t, int32_t) {
  return decode_plan_bytes(std::max(max_rows, 0));
}

size_t workspace_bytes(void*, int32_t op, int32_t max_rows, int32_t num_q_heads, int32_t v_dim,
                       int32_t max_splits) {
  if (op != KVCHECK_OP_PAGED_DECODE) return 0;
  return decode_workspace_bytes(std::max(max_rows, 0), std::max(num_q_heads, 0),
                                         std::max(v_dim, 0), std::max(max_splits, 0));
}

// ---- the table ----------------------------------------------------------------------------

kvcheck_backend make_table() {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  b.name = kName;
  static const std::string version = std::string("kvcheck ") + kKvcheckVersion;
  b.version = version.c_str();
  b.self = nullptr;

  kvcheck_caps& c = b.caps;
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

  b.write_kv = write_kv;
  b.paged_decode = paged_decode;
  b.gather_kv = gather_kv;
  b.varlen_attention = varlen_attention;
  b.merge_states = merge_states;
  b.linear_attention = linear_attention;
  b.fill_blocks = fill_blocks;
  b.quant_fp8 = quant_fp8;
  b.paged_prefill = nullptr;  // kvcheck runs its gather -> varlen -> merge chain
  b.paged_decode_plan = paged_decode_plan;
  b.plan_bytes = plan_bytes;
  b.workspace_bytes = workspace_bytes;
  b.destroy = nullptr;
  return b;
}

// Why this backend cannot serve the request, or "".
std::string refusal(uint32_t abi_version, const kvcheck_host* host) {
  const std::string me = std::string(kName) + ": ";
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION)
    return me + "ABI version " + std::to_string(abi_version) + " asked, this backend speaks " +
           std::to_string(KVCHECK_BACKEND_ABI_VERSION);
  if (host == nullptr || host->struct_size < offsetof(kvcheck_host, options) + sizeof(char*))
    return me + "kvcheck_host is NULL or shorter than its v1 fields";
  if (host->device.device_type != kDLCPU)
    return me + "runs on the host (kDLCPU) only, asked for device type " +
           std::to_string(host->device.device_type) +
           (host->device.device_type == kDLCUDA ? " (kDLCUDA)" : "") + " id " +
           std::to_string(host->device.device_id);
  if (host->options != nullptr && host->options[0] != '\0')
    return me + "takes no options, got \"" + host->options + "\"";
  return "";
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  try {
    const std::string why = refusal(abi_version, host);
    if (!why.empty()) {
      put_error(err, err_size, why);
      return nullptr;
    }
    static const kvcheck_backend table = make_table();
    return &table;
  } catch (...) {
    put_error(err, err_size, std::string(kName) + ": init failed");
    return nullptr;
  }
}
