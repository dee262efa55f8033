// coverage.cpp — the run's mechanism totals, and what the regressions that were on needed but did
// not get: a scenario setting that rules them out, or a mechanism the run never exercised.
#include "report/coverage.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace kv {
namespace {

// The counter of each mechanism, in Mechanism order.
constexpr std::array<int64_t EpochCounters::*, kNumMechanisms> kCounters = {
    &EpochCounters::blocks_recycled,
    &EpochCounters::graph_replays,
    &EpochCounters::padded_rows_replayed,
    &EpochCounters::replayed_multiblock_rows,
    &EpochCounters::prefill_rows_without_context,
    &EpochCounters::prefill_context_tokens,
    &EpochCounters::mixed_prefill_steps,
    &EpochCounters::preemptions,
    &EpochCounters::prefix_hit_blocks,
    &EpochCounters::boundary_prefix_hits,
    &EpochCounters::empty_decode_splits,
};

std::string no_replays(const Scenario& s) {
  return s.engine.cuda_graphs.mode == GraphMode::off
             ? "no step replayed a CUDA graph (engine.cuda_graphs.mode is off)"
             : "no step replayed a CUDA graph (no decode-only step fit a capture size)";
}

// What the run did instead, for a mechanism it counted none of.
std::string not_exercised(Mechanism m, const Scenario& s, const RunCoverage& c) {
  const int64_t replays = c.count(Mechanism::graph_replays);
  switch (m) {
    case Mechanism::blocks_recycled:
      if (c.blocks_allocated <= c.usable_blocks)
        return fmt::format("the pool never turned over ({} of {} usable blocks handed out, "
                           "none twice)",
                           c.blocks_allocated, c.usable_blocks);
      return fmt::format("no block reached the KV block tables twice ({} blocks handed out over "
                         "{} usable)",
                         c.blocks_allocated, c.usable_blocks);
    case Mechanism::graph_replays: return no_replays(s);
    case Mechanism::padded_rows_replayed:
      if (replays == 0) return no_replays(s);
      return fmt::format("each of the {} graph replays ran a full capture batch (no padded rows)",
                         replays);
    case Mechanism::replayed_multiblock_rows:
      if (replays == 0) return no_replays(s);
      return fmt::format("no decode row of the {} graph replays was longer than one block ({} "
                         "tokens)",
                         replays, s.cache.block_size);
    case Mechanism::prefill_rows_without_context:
      return "every prefill row had cached context before it";
    case Mechanism::prefill_context_tokens:
      return "no prefill chunk had cached context (no prefix-cache hit, no chunk continuing a "
             "prompt)";
    case Mechanism::mixed_prefill_steps:
      return "no step mixed prefills with and without cached context";
    case Mechanism::preemptions: return "no request was preempted";
    case Mechanism::prefix_hit_blocks:
      return s.engine.prefix_caching ? "no admission hit the prefix cache"
                                     : "engine.prefix_caching is off";
    case Mechanism::boundary_prefix_hits: return "no prefix hit ended at a block boundary";
    case Mechanism::empty_decode_splits:
      return s.engine.decode_splits == DecodeSplits::per_row
                 ? "engine.decode_splits is \"per_row\": every split the planner gives a row "
                   "holds tokens"
                 : "no decode batch mixed rows needing different split counts";
  }
  return "the run had none";
}

struct SettingGap {
  std::string field, message;
};

bool lists_whole_tile_kind(const Scenario& s) {
  for (LayerKind k : {LayerKind::attention, LayerKind::mla}) {
    const auto& z = s.engine.zero_new_blocks;
    if (has_layer(s.model, k) && std::find(z.begin(), z.end(), k) != z.end()) return true;
  }
  return false;
}

// The settings of `s` under which regression `r` cannot show whatever the run exercises.
std::vector<SettingGap> setting_gaps(Regression r, const Scenario& s) {
  std::vector<SettingGap> gaps;
  switch (r) {
    case Regression::graph_metadata_not_persistent:
      if (s.cache.dtype != DType::fp8_e4m3)
        gaps.push_back({"cache.dtype",
                        fmt::format("needs an fp8_e4m3 cache, but the cache is {} (only the fp8 "
                                    "decode path's own metadata builder plans into fresh buffers)",
                                    to_string(s.cache.dtype))});
      break;
    case Regression::gather_assumes_contiguous:
      if (s.cache.layout != KvLayout::kv_interleaved)
        gaps.push_back({"cache.layout",
                        fmt::format("needs the kv_interleaved cache layout, but the layout is {} "
                                    "(where the shape-derived strides happen to be right)",
                                    to_string(s.cache.layout))});
      else if (!has_layer(s.model, LayerKind::attention))
        gaps.push_back({"model.layers", "needs attention layers on the kv_interleaved layout, but "
                                        "the model has none (MLA caches are never interleaved)"});
      break;
    case Regression::padded_rows_in_reduction:
      if (s.engine.zero_init_outputs)
        gaps.push_back({"engine.zero_init_outputs",
                        "needs padded rows left unwritten, but engine.zero_init_outputs zeroes "
                        "them before every step (the mitigation that hides it)"});
      break;
    case Regression::new_blocks_not_zeroed:
      if (!lists_whole_tile_kind(s))
        gaps.push_back({"engine.zero_new_blocks",
                        "needs a zeroing policy that covers the model's attention or mla layers "
                        "(the regression drops them from it), but it covers none of them"});
      if (s.faults.freed_blocks == PoisonPattern::none &&
          !(has_layer(s.model, LayerKind::linear) && s.cache.pool == PoolKind::hybrid))
        gaps.push_back({"faults.freed_blocks",
                        "needs recycled blocks that can hold non-finite bytes, but freed blocks "
                        "are not poisoned and no linear-attention state shares the pool (a stale "
                        "finite value times p = 0 adds nothing)"});
      break;
    case Regression::merge_ignores_context_count: break;
  }
  return gaps;
}

}  // namespace

int64_t mechanism_count(const EpochCounters& c, Mechanism m) {
  return c.*kCounters[static_cast<size_t>(m)];
}

RunCoverage run_coverage(const std::vector<EpochStats>& epochs) {
  RunCoverage c;
  for (const EpochStats& e : epochs) {
    c.usable_blocks = e.usable_blocks;
    c.blocks_allocated += e.blocks_allocated;
    for (size_t m = 0; m < kNumMechanisms; ++m) c.totals[m] += e.*kCounters[m];
  }
  return c;
}

std::vector<CoverageGap> coverage_gaps(const Scenario& s, const RunCoverage& c,
                                       bool fused_prefill) {
  std::vector<CoverageGap> gaps;
  for (const RegressionInfo& r : all_regressions()) {
    if (!s.regressions.has(r.id)) continue;
    const std::string name(r.name);
    if (fused_prefill && r.level == RegressionLevel::prefill_chain)
      gaps.push_back({name, "backend.paged_prefill",
                      "needs the engine's gather_kv -> varlen_attention -> merge_states chain for "
                      "prefill rows, but the backend's fused paged_prefill replaced it"});
    for (SettingGap& g : setting_gaps(r.id, s))
      gaps.push_back({name, std::move(g.field), std::move(g.message)});
    for (Mechanism m : r.needs) {
      if (c.count(m) > 0) continue;
      const MechanismInfo& info = mechanism_info(m);
      gaps.push_back({name, std::string(info.name),
                      fmt::format("needs {}, but {}", info.needs, not_exercised(m, s, c))});
    }
  }
  return gaps;
}

}  // namespace kv
