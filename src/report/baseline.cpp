// baseline.cpp — what changed between a run and its stored results.
#include "report/baseline.h"

#include <map>

#include <fmt/format.h>

namespace kv {

namespace {

std::string spot_text(const std::optional<FailureSpot>& f) {
  if (!f) return "none";
  return fmt::format("epoch {} step {} at {}", f->epoch, f->step, f->site);
}

void compare_one(const ResultRecord& now, const ResultRecord& was, double factor,
                 std::vector<std::string>& changes) {
  const std::string who = fmt::format("CHANGED {} ({}, seed {})", now.name, now.scenario_path,
                                      now.seed);
  if (now.verdict != was.verdict)
    changes.push_back(fmt::format("{}: verdict {}, was {}", who, now.verdict, was.verdict));
  else if (now.first_failure != was.first_failure)
    changes.push_back(fmt::format("{}: first failure {}, was {}", who,
                                  spot_text(now.first_failure), spot_text(was.first_failure)));
  for (const auto& [site, error] : now.site_max_error) {
    const auto old = was.site_max_error.find(site);
    if (old == was.site_max_error.end()) continue;
    const auto tol = now.site_tolerance.find(site);
    const double tenth = tol == now.site_tolerance.end() ? 0.0 : tol->second / 10;
    if (error > factor * old->second && error - old->second > tenth)
      changes.push_back(fmt::format("{}: site {} largest relative error {:.3g}, was {:.3g} "
                                    "({:.1f}x; more than {:g}x and a tenth of its tolerance "
                                    "{:.3g})",
                                    who, site, error, old->second,
                                    old->second > 0 ? error / old->second : 0.0, factor,
                                    tenth * 10));
  }
}

}  // namespace

BaselineComparison compare_with_baseline(const std::vector<ResultRecord>& now,
                                         const std::vector<ResultRecord>& baseline,
                                         double factor) {
  std::map<std::string, const ResultRecord*> by_key;
  for (const ResultRecord& r : baseline) by_key[r.key()] = &r;
  BaselineComparison c;
  for (const ResultRecord& r : now) {
    const auto it = by_key.find(r.key());
    if (it == by_key.end()) {
      ++c.without;
      continue;
    }
    ++c.compared;
    const size_t before = c.changes.size();
    compare_one(r, *it->second, factor, c.changes);
    if (c.changes.size() > before) ++c.changed_runs;
  }
  return c;
}

std::string baseline_line(const BaselineComparison& c) {
  std::string line =
      fmt::format("baseline: {} compared, {} changed", c.compared, c.changed_runs);
  if (c.without > 0) line += fmt::format(", {} without a stored result", c.without);
  return line;
}

nlohmann::json to_json(const BaselineComparison& c) {
  return {{"line", baseline_line(c)},
          {"compared", c.compared},
          {"changed", c.changed_runs},
          {"without", c.without},
          {"changes", c.changes}};
}

}  // namespace kv
