// epoch_counters.h — what the engine counts while it runs one epoch (Engine::run_epoch); the
// report's EpochStats extends it with what the checks found.
#pragma once

#include <cstdint>

namespace kv {

struct EpochCounters {
  // 64-bit: a workload's steps, replays, preemptions and hits are bounded by its tokens, which
  // can exceed 2^31 (100,000 requests of 65,536 tokens).
  int64_t steps = 0;  // steps that ran (idle steps before an arrival are skipped, not counted)
  int64_t graph_replays = 0;
  int64_t preemptions = 0;
  int64_t prefix_hit_blocks = 0;
  int64_t blocks_allocated = 0;    // blocks handed out by the pool (cache fills x blocks)
  int64_t tokens = 0;              // tokens computed (prefill + decode)
  int64_t peak_cached_tokens = 0;  // most tokens held in the cache at once (after a step's writes)
  double forward_seconds = 0.0;    // device time of the steps (synchronised wall clock)
  // The zero-init mitigation's memsets (engine.zero_init_outputs), timed on their own right before
  // each step that runs them: what the mitigation costs. 0 when it is off.
  double zero_init_seconds = 0.0;

  // ---- coverage: the mechanisms the epoch exercised (scenario/mechanisms.h) ----
  // Blocks handed to the KV block tables that had been handed out before in the run (this epoch
  // or an earlier one, to either block group): they hold what their last holder or a freed-block
  // fill left. The free queue is FIFO, so none is until every usable block has been handed out.
  int64_t blocks_recycled = 0;
  // Graph replays: rows beyond the real ones (capture size - real rows, summed over replays), and
  // the real decode rows whose sequence is longer than one block — the capture batch plans
  // one-token rows, so these are the rows whose split-KV plan a stale capture plan gets wrong.
  int64_t padded_rows_replayed = 0;
  int64_t replayed_multiblock_rows = 0;
  // Prefill rows of chunks with no cached context before them (a prompt's first chunk without a
  // prefix hit): the merge must copy them through. And the cached tokens the other prefill chunks
  // attend to, summed over steps: what the context gather reads.
  int64_t prefill_rows_without_context = 0;
  int64_t prefill_context_tokens = 0;
  int64_t mixed_prefill_steps = 0;   // steps with prefill chunks both with context and without
  int64_t boundary_prefix_hits = 0;  // admissions cached to their last token, at a block boundary
  // Decode splits the built-in planner gave a row past its last token (engine.decode_splits
  // "uniform"): each is an empty softmax state (lse -inf) that the split combine merges.
  int64_t empty_decode_splits = 0;
  int64_t usable_blocks = 0;         // the pool's blocks less the null block (the same each epoch)
};

}  // namespace kv
