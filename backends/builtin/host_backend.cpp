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
#include "backends/builtin/builtin_plugin.h"
#include "kernels/attn_state.cuh"
#include "kernels/decode_splits.h"
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"
#include "report/version.h"

namespace {

using namespace kv;

constexpr const char* kName = "builtin-host";

using builtin_plugin::convert_and_run;
using builtin_plugin::put_error;
using builtin_plugin::run_op;

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
    if (lse) builtin_plugin::host_decode_lse(d, lse);
    return std::string();
  });
}

int32_t paged_decode_plan(void*, const kvcheck_decode_plan_args* a, void*, char* err, size_t n) {
  return run_op("paged_decode_plan", a, err, n, [](const kvcheck_decode_plan_args& in) {
    DecodePlanArgs d;
    std::string why;
    const std::vector<int32_t> plan = builtin_plugin::builtin_plan(in, &d, &why);
    if (why.empty()) memcpy(d.plan, plan.data(), plan.size() * sizeof(int32_t));  // host memory
    return why;
  });
}

// ---- the table ----------------------------------------------------------------------------

kvcheck_backend make_table() {
  static const std::string version = std::string("kvcheck ") + kKvcheckVersion;
  kvcheck_backend b = builtin_plugin::builtin_table(kName, version.c_str(), nullptr);
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
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  const kvcheck_backend* table = kv::builtin_plugin::init(
      kName, kDLCPU, "on a GPU, libkvcheck_backend_cuda.so", abi_version, host, err,
      err_size, make_table);
  return table;
}
