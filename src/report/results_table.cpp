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

void print_epochs_table(std::ostream& os, const std::vector<ResultRecord>& records,
                        bool markdown) {
  struct Row {
    std::string run, regressions, verdict, epoch, clean, nonfinite, error, per_step, zero_init;
  };
  std::vector<Row> rows;
  for (const auto& r : records)
    for (const EpochFigures& e : r.epochs) {
      const double steps = static_cast<double>(std::max<int64_t>(e.steps, 1));
      std::string regs;
      for (const auto& g : r.regressions) regs += (regs.empty() ? "" : ", ") + g;
      rows.push_back({r.name, regs.empty() ? "-" : regs, r.verdict, std::to_string(e.epoch),
                      fmt::format("{:.3f}", e.clean_request_fraction),
                      std::to_string(e.nonfinite_outputs), fmt::format("{:.2e}", e.max_rel_error),
                      fmt::format("{:.1f}", 1e6 * e.forward_seconds / steps),
                      e.zero_init_seconds > 0
                          ? fmt::format("{:.2f}", 1e6 * e.zero_init_seconds / steps)
                          : "-"});
    }
  if (markdown) {
    os << "| run | regressions | verdict | epoch | clean requests | non-finite | max rel err | "
          "us/step | zero-init us/step |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n";
    for (Row& r : rows) {
      std::replace(r.run.begin(), r.run.end(), '|', '/');
      os << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.run, r.regressions,
                        r.verdict, r.epoch, r.clean, r.nonfinite, r.error, r.per_step,
                        r.zero_init);
    }
    return;
  }
  size_t run_w = 3, reg_w = 11;
  for (const Row& r : rows) {
    run_w = std::max(run_w, r.run.size());
    reg_w = std::max(reg_w, r.regressions.size());
  }
  const auto line = [&](const Row& r) {
    os << fmt::format("{:<{}}  {:<{}}  {:<7}  {:>5}  {:>14}  {:>10}  {:>11}  {:>9}  {:>17}\n",
                      r.run, run_w, r.regressions, reg_w, r.verdict, r.epoch, r.clean,
                      r.nonfinite, r.error, r.per_step, r.zero_init);
  };
  line({"run", "regressions", "verdict", "epoch", "clean requests", "non-finite", "max rel err",
        "us/step", "zero-init us/step"});
  for (const Row& r : rows) line(r);
}

}  // namespace kv
