// run_summary.h — the closing lines of a run of several scenarios, in the form CI users know from
// pytest and ctest: "41 passed, 3 failed, 2 could not run, 0 errors in 3m12s", then one line per
// scenario that did not pass. Built from the result documents themselves (report/result_json.h),
// so that a worker's result and an in-process one count alike, and so that stored results can be
// summed the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kv {

enum class ScenarioOutcome { passed, failed, error };

// A result document's outcome: verdict error (a backend crashed, exited, failed or hung) is an
// error, whatever was expected; else it passed when it met its expectation.
ScenarioOutcome outcome_of(const nlohmann::json& result);

struct RunSummary {
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t errors = 0;
  int64_t could_not_run = 0;  // the run stopped at it: refused, no device, deadline, ...
  int64_t not_run = 0;        // after the run stopped (--exitfirst, or a scenario that could not run)
  double seconds = 0.0;
  std::vector<std::string> problems;  // one line per failed or error scenario, in run order

  void add(const nlohmann::json& result);  // counts it; a problem adds its line
  // The same for a run already reduced to its outcome and problem line ("" when it passed).
  void add(ScenarioOutcome outcome, const std::string& problem);
  bool all_passed() const { return failed == 0 && errors == 0 && could_not_run == 0 && not_run == 0; }
};

// "3 passed, 1 failed, 0 could not run, 0 errors in 12.3s" (", 2 not run" before " in" when any).
std::string summary_line(const RunSummary& s);

// "FAILED name (path, seed 7): verdict corrupt, expected clean; first failure: ..." or
// "ERROR name (path, seed 7): <the error's message>".
std::string problem_line(const nlohmann::json& result);

// The summary as `kvcheck run --json` and `kvcheck summarize --json` write it: the counts, the
// seconds, summary_line's text as "line" and the problem lines (run_schema.cpp describes it).
nlohmann::json to_json(const RunSummary& s);

// 0.4s, 12.3s, 3m12s, 1h02m05s.
std::string format_elapsed(double seconds);

}  // namespace kv
