// mechanisms.h — the engine mechanisms a run can exercise, and a regression needs a run to reach.
// A bug that lives in recycled blocks stays hidden until the pool turns over; one in graph
// padding until a replay pads. The engine counts each per epoch (engine/epoch_counters.h, the
// field of the same name); the result reports the run's totals as its coverage and names, for
// every regression that was on, the mechanisms it needs that the run never exercised
// (report/coverage.h). Each regression lists what it needs in its registry entry (regressions.h).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace kv {

enum class Mechanism {
  blocks_recycled,
  graph_replays,
  padded_rows_replayed,
  replayed_multiblock_rows,
  prefill_rows_without_context,
  prefill_context_tokens,
  mixed_prefill_steps,
  preemptions,
  prefix_hit_blocks,
  boundary_prefix_hits,
  empty_decode_splits,
};
inline constexpr std::size_t kNumMechanisms = 11;

struct MechanismInfo {
  Mechanism id;
  std::string_view name;    // the counter: in EpochCounters, epochs[] and coverage of the result
  std::string_view counts;  // one line: what one unit of the counter is
  std::string_view needs;   // what a regression needing it needs, for the hint ("recycled blocks")
};

// In enum order: all_mechanisms()[i].id == Mechanism(i).
const std::vector<MechanismInfo>& all_mechanisms();
const MechanismInfo& mechanism_info(Mechanism m);

}  // namespace kv
