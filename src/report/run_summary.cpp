// run_summary.cpp — counts and lines of a run's closing summary.
#include "report/run_summary.h"

#include <cmath>

#include <fmt/format.h>

namespace kv {

namespace {

std::string text(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// "name (path, seed 7)": which run of which file.
std::string run_label(const nlohmann::json& r) {
  return fmt::format("{} ({}, seed {})", text(r, "scenario"), text(r, "scenario_path"),
                     text(r, "seed"));
}

std::string first_failure_text(const nlohmann::json& ff) {
  std::string line = fmt::format("epoch {}, step {}, request {}, layer {}, site {}, check {}: value {}",
                                 text(ff, "epoch"), text(ff, "step"), text(ff, "request"),
                                 text(ff, "layer"), text(ff, "site"), text(ff, "check"),
                                 text(ff, "value"));
  if (ff.contains("tolerance") && ff["tolerance"].is_number() && ff["tolerance"] != 0)
    line += " (tolerance " + text(ff, "tolerance") + ")";
  return line;
}

}  // namespace

ScenarioOutcome outcome_of(const nlohmann::json& result) {
  if (result.value("verdict", std::string()) == "error") return ScenarioOutcome::error;
  return result.value("meets_expectation", false) ? ScenarioOutcome::passed
                                                  : ScenarioOutcome::failed;
}

void RunSummary::add(const nlohmann::json& result) {
  const ScenarioOutcome o = outcome_of(result);
  add(o, o == ScenarioOutcome::passed ? std::string() : problem_line(result));
}

void RunSummary::add(ScenarioOutcome outcome, const std::string& problem) {
  switch (outcome) {
    case ScenarioOutcome::passed: ++passed; return;
    case ScenarioOutcome::failed: ++failed; break;
    case ScenarioOutcome::error: ++errors; break;
  }
  problems.push_back(problem);
}

std::string summary_line(const RunSummary& s) {
  std::string line = fmt::format("{} passed, {} failed, {} could not run, {} error{}", s.passed,
                                 s.failed, s.could_not_run, s.errors, s.errors == 1 ? "" : "s");
  if (s.not_run > 0) line += fmt::format(", {} not run", s.not_run);
  return line + " in " + format_elapsed(s.seconds);
}

nlohmann::json to_json(const RunSummary& s) {
  return {{"passed", s.passed},   {"failed", s.failed},   {"could_not_run", s.could_not_run},
          {"errors", s.errors},   {"not_run", s.not_run}, {"seconds", s.seconds},
          {"line", summary_line(s)}, {"problems", s.problems}};
}

std::string problem_line(const nlohmann::json& r) {
  if (outcome_of(r) == ScenarioOutcome::error) {
    const auto err = r.find("error");
    return fmt::format("ERROR {}: {}", run_label(r),
                       err != r.end() && err->is_object() ? text(*err, "message") : "-");
  }
  std::string line = fmt::format("FAILED {}: verdict {}, expected {}", run_label(r),
                                 text(r, "verdict"), text(r, "expected"));
  const auto ff = r.find("first_failure");
  if (ff != r.end() && ff->is_object()) line += "; first failure: " + first_failure_text(*ff);
  else if (text(r, "expected") != "clean") line += "; the expected corruption was not found";
  return line;
}

std::string format_elapsed(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  const auto total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = total / 60 % 60, sec = total % 60;
  if (h == 0) return fmt::format("{}m{:02d}s", m, sec);
  return fmt::format("{}h{:02d}m{:02d}s", h, m, sec);
}

}  // namespace kv
