// cmd_list_scenarios.cpp — `kvcheck list scenarios [PATH...]`: the scenarios a folder holds (by
// default ./scenarios), one line each: path, name, expectation, what a run costs (token positions
// over all epochs, estimated work and memory), labels and regressions, so that a CI author can
// pick and shard a suite without opening 46 files. Invalid files are listed as such (exit 2 after the listing).
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "check/run_cost.h"
#include "cli/exit_codes.h"
#include "cli/list_scenarios.h"
#include "cli/load_scenarios.h"
#include "report/format.h"

namespace kv::cli {

namespace {

struct ScenarioRow {
  std::string path, name, expect, regressions;
  std::vector<std::string> labels;
  int64_t tokens = 0;  // over all epochs
  int64_t bytes = 0;   // estimated memory, host and device
  double work = 0;     // RunCost::work: what --shard balances
};

std::vector<ScenarioRow> rows_of(const std::vector<LoadedScenario>& scenarios) {
  std::vector<ScenarioRow> rows;
  for (const auto& l : scenarios) {
    const RunCost cost = estimate_run_cost(l.scenario);
    const std::string regressions = join(l.scenario.regressions.names(), ",");
    rows.push_back({.path = l.path,
                    .name = l.scenario.name,
                    .expect = to_string(l.scenario.expect),
                    .regressions = regressions.empty() ? "-" : regressions,
                    .labels = l.scenario.labels,
                    .tokens = cost.tokens_per_epoch * cost.epochs,
                    .bytes = cost.total_bytes(),
                    .work = cost.work});
  }
  return rows;
}

void print_rows(std::ostream& os, const std::vector<ScenarioRow>& rows) {
  size_t path_w = 4, name_w = 4;
  for (const auto& r : rows) {
    path_w = std::max(path_w, r.path.size());
    name_w = std::max(name_w, r.name.size());
  }
  os << fmt::format("{:<{}}  {:<{}}  {:<7}  {:>8}  {:>8}  {:>10}  {:<12}  {}\n", "path", path_w,
                    "name", name_w, "expect", "tokens", "work", "memory", "labels",
                    "regressions");
  for (const auto& r : rows)
    os << fmt::format("{:<{}}  {:<{}}  {:<7}  {:>8}  {:>8}  {:>10}  {:<12}  {}\n", r.path, path_w,
                      r.name, name_w, r.expect, format_count(static_cast<double>(r.tokens)),
                      format_count(r.work), format_bytes(r.bytes),
                      r.labels.empty() ? "-" : join(r.labels, ","), r.regressions);
  os << fmt::format("{} scenario{}\n", rows.size(), rows.size() == 1 ? "" : "s");
}

}  // namespace

Command add_list_scenarios(CLI::App& list) {
  CLI::App* app = list.add_subcommand(
      "scenarios", "List the scenarios under folders or files (default ./scenarios): name, "
                   "expectation, token positions, estimated work (what --shard balances) and "
                   "memory, labels, regressions");
  auto paths = std::make_shared<std::vector<std::string>>();
  app->add_option("paths", *paths, "Scenario files or folders (default: scenarios)");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Machine-readable output");
  auto action = [paths, json]() {
    const std::vector<std::string> args =
        paths->empty() ? std::vector<std::string>{"scenarios"} : *paths;
    LoadResult loaded = load_scenarios(args);
    const std::vector<ScenarioRow> rows = rows_of(loaded.valid);
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : rows)
        out.push_back({{"path", r.path}, {"name", r.name}, {"expect", r.expect},
                       {"regressions", r.regressions == "-" ? "" : r.regressions},
                       {"labels", r.labels},
                       {"tokens", r.tokens}, {"work", r.work}, {"estimated_bytes", r.bytes}});
      std::cout << out.dump(2) << '\n';
    } else {
      print_rows(std::cout, rows);
    }
    std::cout.flush();
    for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
    return loaded.ok() ? kExitOk : kExitBadInput;
  };
  return {app, action};
}

}  // namespace kv::cli
