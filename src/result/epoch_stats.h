// epoch_stats.h — one epoch of a run: the engine's counters and what the checks found. Plain data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "engine/epoch_counters.h"
#include "result/check_sites.h"

namespace kv {

inline std::array<double, kNumCheckSites> no_site_errors() {
  std::array<double, kNumCheckSites> a;
  a.fill(-1.0);
  return a;
}

// One epoch: the engine's counters and what the checks found.
struct EpochStats : EpochCounters {
  int32_t epoch = 0;  // 1-based
  int32_t requests = 0;
  int32_t checked_requests = 0;  // compared with the reference: all in full mode, the sample's in
                                 // sampled mode
  int32_t clean_requests = 0;
  double clean_request_fraction = 0.0;
  int64_t nonfinite_outputs = 0;
  double max_rel_error = 0.0;               // over all checked rows; NaN if any row was NaN
  // The same per check site (CheckSite order): -1 where the epoch checked no row of the site.
  std::array<double, kNumCheckSites> site_max_rel_error = no_site_errors();
  // The op checks (check/op_checker.h), per site: the largest relative error of an op's output
  // against float64 over its own inputs, and the largest error / bound (above 1: failed); -1
  // where no row of the site was judged so.
  std::array<double, kNumCheckSites> site_max_op_error = no_site_errors();
  std::array<double, kNumCheckSites> site_max_op_bound_ratio = no_site_errors();
  // The same rows' largest relative distance between the op's float64 value over the engine's
  // inputs and the end-to-end reference: the share of the end-to-end error that came in with
  // the op's inputs (upstream rounding, compounded over the layers), not from the op.
  std::array<double, kNumCheckSites> site_max_input_error = no_site_errors();
  std::optional<int64_t> first_bad_step;    // within the epoch
  double seconds = 0.0;                     // wall time of the epoch's steps
  double check_seconds = 0.0;               // spent in the reference and checks
  double reference_seconds = 0.0;           // of check_seconds: computing the reference
  // Of `seconds`: how long the engine waited for the checks. check_seconds when the checks do
  // not overlap the engine; with overlapped checks, the part they did not hide.
  double check_wait_seconds = 0.0;
};

}  // namespace kv
