// cmd_summarize.cpp — `kvcheck summarize RESULTS... [--markdown|--json] [--baseline DIR]`: stored
// result files (a CI job's shards, a nightly's folder) through the one summary model of `run`'s
// closing lines: a row per run, the summary line, a line per run that did not pass; with
// --baseline, what changed against stored results. Exit 0 when every run passed (and nothing
// changed), 1 otherwise, 2 for a file that is not a kvcheck result.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "report/baseline.h"
#include "report/result_record.h"
#include "report/results_table.h"
#include "report/run_summary.h"

namespace kv::cli {

namespace {

RunSummary summary_of(const std::vector<ResultRecord>& records) {
  RunSummary s;
  for (const auto& r : records) {
    s.add(r.outcome, r.problem);
    s.seconds += r.seconds;
  }
  return s;
}

nlohmann::json json_of(const std::vector<ResultRecord>& records, const RunSummary& s,
                       const BaselineComparison* baseline) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : records) {
    nlohmann::json row = {{"file", r.file},       {"run", r.name},
                          {"scenario_path", r.scenario_path},
                          {"device", r.device},   {"backend", r.backend},
                          {"seed", r.seed},       {"verdict", r.verdict},
                          {"expected", r.expected},
                          {"passed", r.outcome == ScenarioOutcome::passed},
                          {"max_rel_error", r.max_rel_error},
                          {"seconds", r.seconds}};
    row["first_failure"] = r.first_failure ? nlohmann::json{{"epoch", r.first_failure->epoch},
                                                            {"step", r.first_failure->step},
                                                            {"site", r.first_failure->site}}
                                           : nlohmann::json(nullptr);
    runs.push_back(std::move(row));
  }
  nlohmann::json out = {{"runs", runs}, {"summary", to_json(s)}};
  if (baseline) out["baseline"] = to_json(*baseline);
  return out;
}

}  // namespace

Command add_summarize_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "summarize", "Summarize stored result files (from `run --out`): a row per run, the "
                   "summary line, each run that did not pass; exit 1 unless all passed");
  auto paths = std::make_shared<std::vector<std::string>>();
  app->add_option("results", *paths, "Result files, or folders of them (recursive)")
      ->required();
  auto markdown = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  CLI::Option* md = app->add_flag("--markdown", *markdown,
                                  "A Markdown table (a CI job summary, results/)");
  CLI::Option* js = app->add_flag("--json", *json, "Machine-readable output")->excludes(md);
  auto brief = std::make_shared<bool>(false);
  CLI::Option* br = app->add_flag(
      "--brief", *brief, "Only the summary line and a line per run that did not pass (no table)")
      ->excludes(md)
      ->excludes(js);
  auto epochs = std::make_shared<bool>(false);
  app->add_flag("--epochs", *epochs,
                "A row per run and epoch: clean requests, non-finite outputs, largest error, "
                "time per step (with --markdown: results/seeds.md's table)")
      ->excludes(js)
      ->excludes(br);
  auto baseline = std::make_shared<std::string>();
  CLI::Option* base = app->add_option("--baseline", *baseline,
                                      "Compare with these stored results (a folder or file): "
                                      "a changed verdict, first failure or grown drift is exit 1");
  auto factor = std::make_shared<double>(kDefaultBaselineFactor);
  app->add_option("--baseline-factor", *factor,
                  "How much a site's largest error may grow (and by more than a tenth of its "
                  "tolerance) before it counts as a change")
      ->check(CLI::Range(1.0, 1e6))
      ->needs(base)
      ->capture_default_str();

  auto action = [=]() {
    StoredResults now = read_result_files(*paths);
    StoredResults stored;
    if (!baseline->empty()) stored = read_result_files({*baseline});
    for (const auto& e : now.errors) spdlog::error("{}", e);
    for (const auto& e : stored.errors) spdlog::error("--baseline: {}", e);
    if (!now.ok() || !stored.ok()) return static_cast<int>(kExitBadInput);
    const RunSummary summary = summary_of(now.records);
    BaselineComparison cmp;
    if (!baseline->empty()) cmp = compare_with_baseline(now.records, stored.records, *factor);
    if (*json) {
      std::cout << json_of(now.records, summary, baseline->empty() ? nullptr : &cmp).dump(2)
                << '\n';
    } else if (*markdown) {
      if (*epochs) {
        print_epochs_table(std::cout, now.records, true);
        std::cout << '\n';
      }
      print_results_markdown(std::cout, now.records, summary);
      if (!baseline->empty()) {
        std::cout << "\n" << baseline_line(cmp) << "\n";
        for (const auto& c : cmp.changes) std::cout << "\n- " << c;
        if (cmp.changed()) std::cout << '\n';
      }
    } else {
      if (*epochs) {
        print_epochs_table(std::cout, now.records, false);
        std::cout << '\n';
      } else if (!*brief) {
        print_results_table(std::cout, now.records);
        std::cout << '\n';
      }
      std::cout << summary_line(summary) << '\n';
      for (const auto& p : summary.problems) std::cout << p << '\n';
      if (!baseline->empty()) {
        std::cout << baseline_line(cmp) << '\n';
        for (const auto& c : cmp.changes) std::cout << c << '\n';
      }
    }
    std::cout.flush();
    return static_cast<int>(summary.all_passed() && !cmp.changed() ? kExitOk : kExitMismatch);
  };
  return {app, action};
}

}  // namespace kv::cli
