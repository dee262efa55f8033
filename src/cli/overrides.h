// overrides.h — what `kvcheck run` options change in a scenario, applied after it is parsed.
//
// --regression / --no-regressions REPLACE the scenario's own list rather than add to it, so one
// scenario file serves both sides of an A/B comparison.
//
// --reference replaces checks.reference and keeps the scenario's sample size (8 when the file
// gives none). --sampled-requests N replaces the sample size and implies --reference sampled: a
// sample size means nothing else, so it is refused beside --reference full.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.h"

namespace kv::cli {

struct Overrides {
  std::optional<uint64_t> seed;                          // replaces scenario.seed
  std::optional<int32_t> epochs;                         // replaces workload.epochs
  std::optional<RegressionSet> regressions;             // replaces scenario.regressions
  std::optional<Expectation> expect;                     // replaces scenario.expect
  bool zero_init_outputs = false;  // turns on engine.zero_init_outputs (the seed-001 mitigation)
  std::optional<ReferenceMode> reference;   // replaces checks.reference
  std::optional<int32_t> sampled_requests;  // replaces checks.sampled_requests; implies sampled
};

// The message for --sampled-requests beside --reference full; nullopt when they agree.
std::optional<std::string> check_reference_overrides(const Overrides& o);

// Applies the overrides.
void apply_overrides(const Overrides& o, Scenario& s);

}  // namespace kv::cli
