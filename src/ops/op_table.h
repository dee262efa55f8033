// op_table.h — the op vocabulary: every op kvcheck's engine runs, one row each, by the one name
// that `kvcheck list`, scenarios (builtin_ops), --backend-op, failure lines, result files, conform
// and the devices' messages use. A row says which op of the backend plugin ABI it is
// (include/kvcheck/backend.h): the attention and cache ops a backend can take over; the synthetic
// model's dense ops are in no ABI and always run on the built-in device. The check sites an op
// feeds are the site table's to say (result/check_sites.h: each site's ops, in the order they
// run; tests/result holds every attention and cache op to some site).
//
// Header-only and constexpr, below device/ and backend/ (both read it): its checks run when it
// compiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kvcheck/backend.h"

namespace kv {

enum class DeviceOp {
  write_kv,
  paged_decode,
  gather_kv,
  varlen_attention,
  merge_states,
  linear_attention,
  fill_blocks,
  quant_fp8,
  paged_prefill,
  embed,
  rms_norm,
  linear,
  argmax,
  convert_rows,
};
inline constexpr std::size_t kNumDeviceOps = 14;

enum class OpRole {
  attention_cache,  // attention and KV-cache ops: what a backend under test implements
  dense_model,      // the synthetic model around them: always kvcheck's own
};

struct DeviceOpInfo {
  DeviceOp op;
  std::string_view name;  // a C string too: every name is a literal
  std::optional<kvcheck_op> abi;  // the plugin ABI's op; none for the dense model's ops
  OpRole role;
  std::string_view does;  // one line
};

// In enum order: kDeviceOps[i].op == DeviceOp(i).
inline constexpr std::array<DeviceOpInfo, kNumDeviceOps> kDeviceOps = {{
    {DeviceOp::write_kv, "write_kv", KVCHECK_OP_WRITE_KV, OpRole::attention_cache,
     "store the step's K/V (or MLA latent) rows into their cache slots; slot -1 is skipped"},
    {DeviceOp::paged_decode, "paged_decode", KVCHECK_OP_PAGED_DECODE, OpRole::attention_cache,
     "split-KV decode over the paged cache with a state merge, LSE out; over the one-head "
     "latent cache it is MLA decode (V = the first kv_lora_rank features)"},
    {DeviceOp::gather_kv, "gather_kv", KVCHECK_OP_GATHER_KV, OpRole::attention_cache,
     "copy each prefill sequence's cached context into a contiguous workspace, by the cache's "
     "strides"},
    {DeviceOp::varlen_attention, "varlen_attention", KVCHECK_OP_VARLEN_ATTENTION,
     OpRole::attention_cache,
     "attention of variable-length prefill rows over a contiguous K/V: causal over the new "
     "tokens, or over the gathered context; LSE out"},
    {DeviceOp::merge_states, "merge_states", KVCHECK_OP_MERGE_STATES, OpRole::attention_cache,
     "combine the context and new-token partials by their log-sum-exp weights (the first "
     "num_merge rows; the rest copy the new-token partial)"},
    {DeviceOp::linear_attention, "linear_attention", KVCHECK_OP_LINEAR_ATTENTION,
     OpRole::attention_cache,
     "gated linear attention over per-request f32 state blocks of the pool"},
    {DeviceOp::fill_blocks, "fill_blocks", KVCHECK_OP_FILL_BLOCKS, OpRole::attention_cache,
     "fill cache blocks by id: zero new ones (the zero-on-allocation policy), poison freed "
     "ones with NaN/Inf/random bits when faults ask"},
    {DeviceOp::quant_fp8, "quant_fp8", KVCHECK_OP_QUANT_FP8, OpRole::attention_cache,
     "dynamic fp8 quantisation of the attention output with a batch-wide amax"},
    {DeviceOp::paged_prefill, "paged_prefill", KVCHECK_OP_PAGED_PREFILL, OpRole::attention_cache,
     "a backend's fused prefill: new tokens over their cached context and causally over "
     "themselves, from the paged cache, in place of gather_kv -> varlen_attention -> "
     "merge_states"},
    {DeviceOp::embed, "embed", std::nullopt, OpRole::dense_model,
     "token ids and positions to hidden states"},
    {DeviceOp::rms_norm, "rms_norm", std::nullopt, OpRole::dense_model,
     "RMS normalisation of hidden states"},
    {DeviceOp::linear, "linear", std::nullopt, OpRole::dense_model,
     "dense projection: q/k/v, gate, o_proj, LM head; grouped, MLA's per-head up-projection"},
    {DeviceOp::argmax, "argmax", std::nullopt, OpRole::dense_model,
     "greedy next token from the logits (-1 for NaN logits)"},
    {DeviceOp::convert_rows, "convert_rows", std::nullopt, OpRole::dense_model,
     "the bridge to a backend's declared conventions: q/out between float32 and its io dtype, "
     "lse between bases and empty-row values"},
}};

constexpr const std::array<DeviceOpInfo, kNumDeviceOps>& all_device_ops() { return kDeviceOps; }
constexpr const DeviceOpInfo& op_info(DeviceOp op) { return kDeviceOps[static_cast<size_t>(op)]; }
constexpr std::string_view op_name(DeviceOp op) { return op_info(op).name; }

constexpr std::optional<DeviceOp> find_device_op(std::string_view name) {
  for (const DeviceOpInfo& o : kDeviceOps)
    if (o.name == name) return o.op;
  return std::nullopt;
}

// The row of an ABI op (a kvcheck_op value as a plugin or the ABI hands it); nullptr for a value
// that is no ABI op.
constexpr const DeviceOpInfo* find_abi_op(int32_t abi) {
  for (const DeviceOpInfo& o : kDeviceOps)
    if (o.abi && *o.abi == abi) return &o;
  return nullptr;
}

// The ABI op of a name (write_kv, ..., paged_prefill); none for a dense op's name or an unknown
// one.
constexpr std::optional<kvcheck_op> abi_op_from_name(std::string_view name) {
  const std::optional<DeviceOp> op = find_device_op(name);
  return op ? op_info(*op).abi : std::nullopt;
}

// ---- what the table must be (checked as it compiles) ----

namespace op_table_check {

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kNumDeviceOps; ++i)
    if (kDeviceOps[i].op != static_cast<DeviceOp>(i)) return false;
  return static_cast<size_t>(DeviceOp::convert_rows) + 1 == kNumDeviceOps;
}

constexpr bool names_unique() {
  for (size_t i = 0; i < kNumDeviceOps; ++i)
    for (size_t j = i + 1; j < kNumDeviceOps; ++j)
      if (kDeviceOps[i].name == kDeviceOps[j].name) return false;
  return true;
}

// Every ABI op is exactly one row's, and the rows with one are the attention and cache ops.
constexpr bool abi_ops_once() {
  for (int32_t a = 0; a < KVCHECK_NUM_OPS; ++a) {
    int rows = 0;
    for (const DeviceOpInfo& o : kDeviceOps) rows += o.abi && *o.abi == a ? 1 : 0;
    if (rows != 1) return false;
  }
  for (const DeviceOpInfo& o : kDeviceOps)
    if (o.abi.has_value() != (o.role == OpRole::attention_cache)) return false;
  return true;
}

}  // namespace op_table_check

static_assert(op_table_check::in_enum_order(), "kDeviceOps must list DeviceOp in enum order");
static_assert(op_table_check::names_unique(), "an op name is used twice");
static_assert(op_table_check::abi_ops_once(),
              "every kvcheck_op must be exactly one attention/cache row's");

}  // namespace kv
