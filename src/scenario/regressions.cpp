#include "scenario/regressions.h"


namespace kv {

const char* to_string(RegressionLevel l) {
  return l == RegressionLevel::engine ? "engine" : "prefill_chain";
}

const std::vector<RegressionInfo>& all_regressions() {
  static const std::vector<RegressionInfo> list = {
      {Regression::merge_ignores_context_count, "merge-ignores-context-count",
       "merge_attn_states merges every prefill token with the context output, including tokens "
       "without context whose context output was never written",
       "seed 002, vLLM PR 36540 (chunked MLA prefill)", RegressionLevel::prefill_chain,
       {Mechanism::prefill_rows_without_context}},
      {Regression::padded_rows_in_reduction, "padded-rows-in-reduction",
       "the batch-wide fp8 amax runs over the padded rows of a CUDA-graph replay, whose outputs "
       "were never written",
       "seed 001, vLLM PR 38359 (NaN under CUDA-graph padding)", RegressionLevel::engine,
       {Mechanism::padded_rows_replayed}},
      {Regression::graph_metadata_not_persistent, "graph-metadata-not-persistent",
       "the fp8 decode path's own metadata builder writes the split-KV plan into fresh buffers "
       "each step instead of the persistent ones the captured graph reads (the bf16 path is "
       "unaffected)",
       "seed 003, vLLM PR 35175 (fp8 FlashMLA decode under full CUDA graphs)",
       RegressionLevel::engine, {Mechanism::replayed_multiblock_rows}},
      {Regression::new_blocks_not_zeroed, "new-blocks-not-zeroed",
       "the zero-on-allocation policy skips the layer kinds whose decode kernel multiplies the "
       "whole last tile, so stale NaN in a recycled block reaches P*V",
       "seed 000, vLLM PR 43961 (MLA + linear attention garbage after the cache fills)",
       RegressionLevel::engine, {Mechanism::blocks_recycled}},
      {Regression::gather_assumes_contiguous, "gather-assumes-contiguous",
       "the context gather is handed a cache descriptor whose strides were computed from the "
       "shape instead of the cache's own; wrong on the interleaved [K0][V0][K1][V1] layout",
       "seed 004, vLLM PR 37228 (ROCm hybrid-model gather)", RegressionLevel::prefill_chain,
       {Mechanism::prefill_context_tokens}},
  };
  return list;
}

const RegressionInfo& regression_info(Regression r) {
  return all_regressions().at(static_cast<size_t>(r));
}

const RegressionInfo* find_regression(std::string_view name) {
  for (const auto& r : all_regressions())
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<std::string> regression_names() {
  std::vector<std::string> names;
  for (const auto& r : all_regressions()) names.emplace_back(r.name);
  return names;
}

std::vector<std::string> RegressionSet::names() const {
  std::vector<std::string> out;
  for (const auto& r : all_regressions())
    if (has(r.id)) out.emplace_back(r.name);
  return out;
}

}  // namespace kv
