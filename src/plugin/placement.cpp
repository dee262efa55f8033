// placement.cpp — the backend's capabilities against a scenario, op by op.
#include "plugin/placement.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "backend/abi_caps.h"
#include "backend/abi_tensor.h"

namespace kv {
namespace {

// One attention-like cache of the scenario as the ABI describes it.
struct CacheUse {
  const char* layer;  // "attention" or "mla"
  kvcheck_kv_layout layout;
  int32_t head_dim;
  int32_t gqa_ratio;  // 0 for mla
  int32_t mla_rope_dim;  // mla only
};

std::vector<CacheUse> cache_uses(const Scenario& s) {
  std::vector<CacheUse> uses;
  if (has_layer(s.model, LayerKind::attention))
    uses.push_back({"attention",
                    s.cache.layout == KvLayout::kv_interleaved ? KVCHECK_LAYOUT_KV_INTERLEAVED
                                                            : KVCHECK_LAYOUT_KV_SEPARATE,
                    s.model.head_dim, s.model.num_q_heads / std::max(s.model.num_kv_heads, 1),
                    0});
  if (has_layer(s.model, LayerKind::mla))
    uses.push_back({"mla", KVCHECK_LAYOUT_MLA_LATENT, s.model.kv_lora_rank + s.model.qk_rope_dim,
                    0, s.model.qk_rope_dim});
  return uses;
}

// Why the backend's `op` cannot take the scenario, or nullopt.
std::optional<std::string> cannot_take(kvcheck_op op, const kvcheck_caps& c, const Scenario& s) {
  const bool cache_op = op == KVCHECK_OP_WRITE_KV || op == KVCHECK_OP_PAGED_DECODE ||
                        op == KVCHECK_OP_GATHER_KV || op == KVCHECK_OP_FILL_BLOCKS ||
                        op == KVCHECK_OP_PAGED_PREFILL;
  if (cache_op || op == KVCHECK_OP_VARLEN_ATTENTION)
    for (const CacheUse& u : cache_uses(s)) {
      const std::string why = backend::caps_refusal(
          c, {.dtype = s.cache.dtype, .layout = u.layout, .head_dim = u.head_dim,
              .block_size = s.cache.block_size,
              .gqa_ratio = op == KVCHECK_OP_PAGED_DECODE || op == KVCHECK_OP_PAGED_PREFILL ||
                                   op == KVCHECK_OP_VARLEN_ATTENTION
                               ? u.gqa_ratio
                               : 0,
              .mla_rope_dim = u.mla_rope_dim,
              .paged = cache_op});
      if (!why.empty()) return why + " (" + u.layer + " layers)";
    }
  return std::nullopt;
}

// The ops the scenario calls at all.
bool scenario_uses(kvcheck_op op, const Scenario& s) {
  const bool attention_like =
      has_layer(s.model, LayerKind::attention) || has_layer(s.model, LayerKind::mla);
  switch (op) {
    case KVCHECK_OP_LINEAR_ATTENTION: return has_layer(s.model, LayerKind::linear);
    case KVCHECK_OP_FILL_BLOCKS: return true;
    default: return attention_like;
  }
}

}  // namespace

Placement place_ops(const BackendLibrary& lib, const PlacementRequest& req, Scenario& s) {
  Placement out;
  const kvcheck_caps& caps = lib.table().caps;
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i) {
    const auto op = static_cast<kvcheck_op>(i);
    if (!lib.implements(op) || !scenario_uses(op, s)) continue;
    const std::string name = backend::op_name(op);
    if (std::find(req.pinned_builtin.begin(), req.pinned_builtin.end(), op) !=
        req.pinned_builtin.end()) {
      out.notes.push_back(name + ": built-in (--backend-op " + name + "=builtin)");
      continue;
    }
    if (const auto why = cannot_take(op, caps, s)) {
      if (!req.allow_fallback)
        throw BackendLoadError(fmt::format(
            "backend {} cannot run scenario {}: it implements {}, but {}; pin the op to the "
            "built-in device (--backend-op {}=builtin) or pass --allow-fallback",
            lib.name(), s.name, name, *why, name));
      out.notes.push_back(name + ": built-in (fallback: " + *why + ")");
      continue;
    }
    out.ops.on_backend[static_cast<size_t>(op)] = true;
  }
  // The fused prefill replaces the engine's gather -> varlen -> merge chain for prefill rows, and
  // with it the regressions that live in the engine's calls of that chain.
  if (out.ops[KVCHECK_OP_PAGED_PREFILL]) {
    out.notes.push_back("engine: prefill rows run the backend's fused paged_prefill, not "
                        "gather_kv -> varlen_attention -> merge_states");
    for (const RegressionInfo& r : all_regressions())
      if (r.level == RegressionLevel::prefill_chain && s.regressions.has(r.id))
        out.notes.push_back(fmt::format("regression {} has no effect: it lives in the chain the "
                                        "fused paged_prefill replaces",
                                        r.name));
  }
  // Conventions the engine bridges (BackendDevice), said in the result.
  const bool varlen = out.ops[KVCHECK_OP_VARLEN_ATTENTION];
  const bool merge = out.ops[KVCHECK_OP_MERGE_STATES];
  const bool decode = out.ops[KVCHECK_OP_PAGED_DECODE];
  if (caps.io_dtype != KVCHECK_F32 && (varlen || merge || decode))
    out.notes.push_back(fmt::format("engine: q and out converted between f32 and {} around the "
                                    "backend's attention ops",
                                    backend::dtype_name(caps.io_dtype)));
  if (varlen != merge && (caps.lse_base != KVCHECK_LSE_NATURAL || caps.empty_row_lse > 0))
    out.notes.push_back(fmt::format(
        "engine: lse converted (base {}, empty rows {} <-> base e, -inf) between the backend's "
        "{} and the built-in {}",
        caps.lse_base == KVCHECK_LSE_BASE2 ? "2" : "e", caps.empty_row_lse > 0 ? "+inf" : "-inf",
        varlen ? "varlen_attention" : "merge_states",
        varlen ? "merge_states" : "varlen_attention"));
  if (decode && s.engine.cuda_graphs.mode == GraphMode::decode &&
      (caps.pad_seq_len != 0 || caps.pad_block_id != 0))
    out.notes.push_back(fmt::format("engine: graph-padded decode rows get seq_len {} and block "
                                    "id {} (the backend's padding contract)",
                                    caps.pad_seq_len, caps.pad_block_id));
  // New blocks zeroed for every attention-like layer if the backend needs it (a regression that
  // forgets them still does: that is the bug it models).
  if (caps.needs_zeroed_blocks) {
    for (LayerKind k : {LayerKind::attention, LayerKind::mla})
      if (std::find(s.engine.zero_new_blocks.begin(), s.engine.zero_new_blocks.end(), k) ==
          s.engine.zero_new_blocks.end()) {
        s.engine.zero_new_blocks.push_back(k);
        out.notes.push_back(std::string("engine: zeroes new ") + to_string(k) +
                            " blocks (the backend needs zeroed blocks)");
      }
  }
  bool any_backend = false;
  for (bool b : out.ops.on_backend) any_backend = any_backend || b;
  if (caps.graph_support == KVCHECK_GRAPHS_NONE && any_backend &&
      s.engine.cuda_graphs.mode != GraphMode::off) {
    s.engine.cuda_graphs.mode = GraphMode::off;
    out.notes.push_back("engine: CUDA graphs off (the backend supports none)");
  }
  return out;
}

}  // namespace kv
