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

void apply_overrides(const Overrides& o, Scenario& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.epochs) s.workload.epochs = *o.epochs;
  if (o.expect) s.expect = *o.expect;
  if (o.zero_init_outputs) s.engine.zero_init_outputs = true;
  if (o.regressions) {
    s.regressions.clear();
    for (const auto& n : *o.regressions)
      if (std::find(s.regressions.begin(), s.regressions.end(), n) == s.regressions.end())
        s.regressions.push_back(n);
  }
}

}  // namespace kv::cli
