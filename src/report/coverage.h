// coverage.h — what a run exercised: the engine's mechanism counters (scenario/mechanisms.h)
// summed over its epochs, and the coverage gaps: for every regression that was on, the
// mechanisms it needs that the run never exercised, or the scenario setting that keeps it from
// showing. A regression scenario that comes out clean names its gaps in the warning's hint and in
// the result's "coverage_gaps", so "not found" reads as "not reached" where that is why.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "result/run_result.h"
#include "scenario/mechanisms.h"
#include "scenario/scenario.h"

namespace kv {

using CoverageGap = RunResult::CoverageGap;

struct RunCoverage {
  int64_t usable_blocks = 0;     // the pool's blocks less the null block
  int64_t blocks_allocated = 0;  // over all epochs, both block groups
  std::array<int64_t, kNumMechanisms> totals{};  // per mechanism, in Mechanism order
  int64_t count(Mechanism m) const { return totals[static_cast<size_t>(m)]; }
  // Blocks handed out per usable block: 1.0 is one pool's worth. The free queue hands out every
  // never-used block before any freed one, so none is recycled before this passes 1.
  double pool_turnovers() const {
    return usable_blocks > 0 ? static_cast<double>(blocks_allocated) / usable_blocks : 0.0;
  }
};

// The epoch's counter of a mechanism.
int64_t mechanism_count(const EpochCounters& c, Mechanism m);
RunCoverage run_coverage(const std::vector<EpochStats>& epochs);

// In registry order, for each regression `s` switches on: the settings of `s` that keep it from
// showing (named by their field: "cache.dtype"; "backend.paged_prefill" for a prefill-chain
// regression when a backend's fused paged_prefill replaced the chain), then each mechanism it
// needs that `c` counts none of.
std::vector<CoverageGap> coverage_gaps(const Scenario& s, const RunCoverage& c,
                                       bool fused_prefill = false);

}  // namespace kv
