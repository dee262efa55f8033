// results_table.cpp — one row per run: name, device, backend, seed, outcome, verdict and
// expectation, largest relative error, first failure, seconds.
#include "report/results_table.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace kv {

namespace {

const char* outcome_text(ScenarioOutcome o) {
  switch (o) {
    case ScenarioOutcome::passed: return "passed";
    case ScenarioOutcome::failed: return "FAILED";
    case ScenarioOutcome::error: return "ERROR";
  }
  return "?";
}

std::string first_failure_cell(const ResultRecord& r) {
  if (!r.first_failure) return "-";
  return fmt::format("epoch {} step {} {}", r.first_failure->epoch, r.first_failure->step,
                     r.first_failure->site);
}

struct Cells {
  std::string name, device, backend, seed, outcome, verdict, error, first, seconds;
};

Cells cells_of(const ResultRecord& r) {
  return {r.name,
          r.device,
          r.backend.empty() ? "-" : r.backend,
          std::to_string(r.seed),
          outcome_text(r.outcome),
          r.verdict + " (" + (r.expected.empty() ? "-" : r.expected) + ")",
          fmt::format("{:.2e}", r.max_rel_error),
          first_failure_cell(r),
          fmt::format("{:.1f}", r.seconds)};
}

}  // namespace

void print_results_table(std::ostream& os, const std::vector<ResultRecord>& records) {
  std::vector<Cells> rows;
  size_t name_w = 3;
  for (const auto& r : records) {
    rows.push_back(cells_of(r));
    name_w = std::max(name_w, rows.back().name.size());
  }
  os << fmt::format("{:<{}}  {:<6}  {:<12}  {:>5}  {:<7}  {:<18}  {:>9}  {:<24}  {:>7}\n", "run",
                    name_w, "device", "backend", "seed", "outcome", "verdict (expected)",
                    "max error", "first failure", "seconds");
  for (const auto& c : rows)
    os << fmt::format("{:<{}}  {:<6}  {:<12}  {:>5}  {:<7}  {:<18}  {:>9}  {:<24}  {:>7}\n", c.name,
                      name_w, c.device, c.backend, c.seed, c.outcome, c.verdict, c.error, c.first,
                      c.seconds);
}

void print_results_markdown(std::ostream& os, const std::vector<ResultRecord>& records,
                            const RunSummary& summary) {
  os << "**kvcheck: " << summary_line(summary) << "**\n\n";
  os << "| run | device | backend | seed | outcome | verdict (expected) | max rel error | first "
        "failure | seconds |\n|---|---|---|---:|---|---|---:|---|---:|\n";
  for (const auto& r : records) {
    Cells c = cells_of(r);
    std::replace(c.name.begin(), c.name.end(), '|', '/');
    os << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c.name, c.device,
                      c.backend, c.seed, c.outcome, c.verdict, c.error, c.first, c.seconds);
  }
}

}  // namespace kv
