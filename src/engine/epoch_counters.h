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
};

}  // namespace kv
