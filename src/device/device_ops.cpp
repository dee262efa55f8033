// device_ops.cpp — the op table.
#include "device/device_ops.h"

namespace kv {

const std::vector<DeviceOpInfo>& all_device_ops() {
  using enum DeviceOp;
  constexpr OpRole cache = OpRole::attention_cache, dense = OpRole::dense_model;
  static const std::vector<DeviceOpInfo> ops = {
      {write_kv, "write_kv", cache,
       "store the step's K/V (or MLA latent) rows into their cache slots; slot -1 is skipped"},
      {paged_decode, "paged_decode", cache,
       "split-KV decode over the paged cache with a state merge, LSE out; over the one-head "
       "latent cache it is MLA decode (V = the first kv_lora_rank features)"},
      {gather_kv, "gather_kv", cache,
       "copy each prefill sequence's cached context into a contiguous workspace, by the cache's "
       "strides"},
      {varlen_attention, "varlen_attention", cache,
       "attention of variable-length prefill rows over a contiguous K/V: causal over the new "
       "tokens, or over the gathered context; LSE out"},
      {merge_states, "merge_states", cache,
       "combine the context and new-token partials by their log-sum-exp weights (the first "
       "num_merge rows; the rest copy the new-token partial)"},
      {linear_attention, "linear_attention", cache,
       "gated linear attention over per-request f32 state blocks of the pool"},
      {fill_blocks, "fill_blocks", cache,
       "fill cache blocks by id: zero new ones (the zero-on-allocation policy), poison freed "
       "ones with NaN/Inf/random bits when faults ask"},
      {quant_fp8, "quant_fp8", cache,
       "dynamic fp8 quantisation of the attention output with a batch-wide amax"},
      {paged_prefill, "paged_prefill", cache,
       "a backend's fused prefill: new tokens over their cached context and causally over "
       "themselves, from the paged cache, in place of gather_kv -> varlen_attention -> "
       "merge_states"},
      {embed, "embed", dense, "token ids and positions to hidden states"},
      {rms_norm, "rms_norm", dense, "RMS normalisation of hidden states"},
      {linear, "linear", dense,
       "dense projection: q/k/v, gate, o_proj, LM head; grouped, MLA's per-head up-projection"},
      {argmax, "argmax", dense, "greedy next token from the logits (-1 for NaN logits)"},
      {convert_rows, "convert_rows", dense,
       "the bridge to a backend's declared conventions: q/out between float32 and its io dtype, "
       "lse between bases and empty-row values"},
  };
  return ops;
}

const DeviceOpInfo& op_info(DeviceOp op) { return all_device_ops().at(static_cast<size_t>(op)); }

std::string_view op_name(DeviceOp op) { return op_info(op).name; }

std::optional<DeviceOp> find_device_op(std::string_view name) {
  for (const auto& o : all_device_ops())
    if (o.name == name) return o.op;
  return std::nullopt;
}

}  // namespace kv
