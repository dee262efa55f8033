// mechanisms.cpp — the mechanism table: each counter's name, what one unit of it is, and what a
// regression that needs it needs.
#include "scenario/mechanisms.h"

namespace kv {

const std::vector<MechanismInfo>& all_mechanisms() {
  static const std::vector<MechanismInfo> list = {
      {Mechanism::blocks_recycled, "blocks_recycled",
       "blocks handed to the KV block tables that had been handed out before in the run (this "
       "epoch or an earlier one): they hold what an earlier holder, or a freed-block fill, left",
       "recycled blocks"},
      {Mechanism::graph_replays, "graph_replays", "steps that replayed a captured CUDA graph",
       "CUDA-graph replays"},
      {Mechanism::padded_rows_replayed, "padded_rows_replayed",
       "rows of graph replays beyond the step's real rows (capture size - real rows, summed)",
       "graph replays with padded rows"},
      {Mechanism::replayed_multiblock_rows, "replayed_multiblock_rows",
       "real decode rows of graph replays whose sequence is longer than one block: the rows "
       "whose split-KV plan can differ from the capture batch's (one-token rows)",
       "graph-replayed decode rows longer than one block"},
      {Mechanism::prefill_rows_without_context, "prefill_rows_without_context",
       "prefill rows of chunks with no cached context before them: the rows the merge must copy "
       "through, not merge with a context output",
       "prefill rows without cached context"},
      {Mechanism::prefill_context_tokens, "prefill_context_tokens",
       "cached tokens the prefill chunks with context attend to, summed over steps: what the "
       "context gather reads",
       "prefill over cached context (the context gather)"},
      {Mechanism::mixed_prefill_steps, "mixed_prefill_steps",
       "steps with prefill chunks both with cached context and without",
       "steps mixing prefills with and without cached context"},
      {Mechanism::preemptions, "preemptions", "requests preempted (by recompute)", "preemptions"},
      {Mechanism::prefix_hit_blocks, "prefix_hit_blocks",
       "blocks taken from the prefix cache by admissions", "prefix-cache hits"},
      {Mechanism::boundary_prefix_hits, "boundary_prefix_hits",
       "admissions whose tokens were cached up to the last one, ending exactly at a block "
       "boundary: the scheduler recomputes the last block so that the step samples a token",
       "prefix hits that end at a block boundary"},
      {Mechanism::empty_decode_splits, "empty_decode_splits",
       "decode splits the built-in planner gave a row past its last token "
       "(engine.decode_splits \"uniform\"): empty softmax states the combine must merge",
       "decode splits with no tokens"},
  };
  return list;
}

const MechanismInfo& mechanism_info(Mechanism m) {
  return all_mechanisms().at(static_cast<size_t>(m));
}

}  // namespace kv
