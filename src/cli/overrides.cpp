// overrides.cpp — command-line overrides of a parsed scenario.
#include "cli/overrides.h"

#include <algorithm>

#include "scenario/regressions.h"
#include "scenario/suggest.h"

namespace kv::cli {

std::vector<std::string> check_regression_names(const std::vector<std::string>& names) {
  std::vector<std::string> known;
  for (const auto& r : all_regressions()) known.emplace_back(r.name);
  std::vector<std::string> errors;
  for (const auto& n : names) {
    if (find_regression(n)) continue;
    // suggestion_tail: `; did you mean "x"?` or, when nothing is close, the full list.
    errors.push_back("--regression: unknown regression \"" + n + "\"" + suggestion_tail(n, known) +
                     " (`kvcheck list` describes them)");
  }
  return errors;
}

std::optional<std::string> check_reference_overrides(const Overrides& o) {
  if (o.sampled_requests && o.reference == ReferenceMode::full)
    return "--sampled-requests: given with --reference full, which checks every request against "
           "the reference, so there is no sample to size; drop one of them (--sampled-requests "
           "alone implies --reference sampled)";
  return std::nullopt;
}

void apply_overrides(const Overrides& o, Scenario& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.epochs) s.workload.epochs = *o.epochs;
  if (o.expect) s.expect = *o.expect;
  if (o.zero_init_outputs) s.engine.zero_init_outputs = true;
  if (o.reference) s.checks.reference = *o.reference;
  if (o.sampled_requests) {
    s.checks.reference = ReferenceMode::sampled;
    s.checks.sampled_requests = *o.sampled_requests;
  }
  if (o.regressions) {
    s.regressions.clear();
    for (const auto& n : *o.regressions)
      if (std::find(s.regressions.begin(), s.regressions.end(), n) == s.regressions.end())
        s.regressions.push_back(n);
  }
}

}  // namespace kv::cli
