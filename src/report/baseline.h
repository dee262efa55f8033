// baseline.h — a run compared with stored results (`kvcheck run --baseline DIR`, `kvcheck
// summarize --baseline DIR`): each run that has a stored result of the same key (scenario path,
// name, seed, backend, device; ResultRecord::key) changes when its verdict, its first bad step or
// its first failure's site changes, or when a check site's largest relative error grows by more
// than `factor` and by more than a tenth of that site's tolerance: drift that creeps up under the
// tolerance after a dependency bump is a regression before it becomes a NaN.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/result_record.h"

namespace kv {

inline constexpr double kDefaultBaselineFactor = 2.0;

struct BaselineComparison {
  size_t compared = 0;               // runs with a stored result
  size_t without = 0;                // runs without one (new scenarios, seeds, backends)
  size_t changed_runs = 0;           // runs with at least one change
  std::vector<std::string> changes;  // "CHANGED <name> (...): <what>", one per change
  bool changed() const { return !changes.empty(); }
};

BaselineComparison compare_with_baseline(const std::vector<ResultRecord>& now,
                                         const std::vector<ResultRecord>& baseline,
                                         double factor = kDefaultBaselineFactor);

// "baseline: 40 compared, 2 changed, 1 without a stored result".
std::string baseline_line(const BaselineComparison& c);

// The comparison as `kvcheck run --json` and `kvcheck summarize --json` write it: baseline_line's
// text as "line", the counts, and the CHANGED lines.
nlohmann::json to_json(const BaselineComparison& c);

}  // namespace kv
