// result_record.cpp — result documents to records, and reading stored ones.
#include "report/result_record.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "io/input_file.h"

namespace kv {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxResultBytes = 256u << 20;

std::string string_at(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string())
    throw std::runtime_error(fmt::format("no \"{}\" string: not a kvcheck result", key));
  return it->get<std::string>();
}

// A number, or the strings a result writes for non-finite values ("nan", "inf", "-inf").
double number_or(const nlohmann::json& doc, const char* key, double fallback) {
  const auto it = doc.find(key);
  if (it == doc.end()) return fallback;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return fallback;
}

// The larger of the two; NaN wins (a NaN must never read as a small error).
double worse(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

void add_files(const fs::path& dir, std::vector<std::string>& out, std::string& error) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name.front() == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && name.ends_with(".json")) found.push_back(it->path().string());
  }
  if (ec) error = fmt::format("{}: cannot list the folder: {}", dir.string(), ec.message());
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
}

}  // namespace

std::string ResultRecord::key() const {
  return fmt::format("{} | {} | seed {} | {} | {}",
                     fs::path(scenario_path).lexically_normal().string(), name, seed,
                     backend.empty() ? "built-in ops" : backend, device);
}

ResultRecord record_of(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object()) throw std::runtime_error("not a JSON object: not a kvcheck result");
  if (!string_at(doc, "schema").starts_with("kvcheck.result/"))
    throw std::runtime_error("its \"schema\" is not kvcheck.result/N: not a kvcheck result");
  ResultRecord r;
  r.file = file;
  r.name = string_at(doc, "scenario");
  r.scenario_path = doc.value("scenario_path", std::string());
  r.device = doc.value("device", std::string());
  if (const auto b = doc.find("backend"); b != doc.end() && b->is_object())
    r.backend = b->value("name", std::string("backend"));
  r.seed = doc.value("seed", uint64_t{0});
  r.verdict = string_at(doc, "verdict");
  r.expected = doc.value("expected", std::string());
  r.outcome = outcome_of(doc);
  if (const auto ff = doc.find("first_failure"); ff != doc.end() && ff->is_object())
    r.first_failure = FailureSpot{.epoch = ff->value("epoch", int64_t{0}),
                                  .step = ff->value("step", int64_t{0}),
                                  .site = ff->value("site", std::string())};
  if (const auto epochs = doc.find("epochs"); epochs != doc.end() && epochs->is_array())
    for (const auto& e : *epochs) {
      if (!e.is_object()) throw std::runtime_error("an \"epochs\" row is not an object");
      r.epochs.push_back({.epoch = e.value("epoch", int64_t{0}),
                          .clean_request_fraction = number_or(e, "clean_request_fraction", 0.0),
                          .nonfinite_outputs = e.value("nonfinite_outputs", int64_t{0}),
                          .max_rel_error = number_or(e, "max_rel_error", 0.0),
                          .steps = e.value("steps", int64_t{0}),
                          .forward_seconds = number_or(e, "forward_seconds", 0.0),
                          .zero_init_seconds = number_or(e, "zero_init_seconds", 0.0)});
      r.max_rel_error = worse(r.max_rel_error, number_or(e, "max_rel_error", 0.0));
      if (const auto by = e.find("max_rel_error_by_site"); by != e.end() && by->is_object())
        for (const auto& [site, v] : by->items())
          r.site_max_error[site] = worse(r.site_max_error[site], number_or(*by, site.c_str(), 0.0));
    }
  if (const auto t = doc.find("tolerances"); t != doc.end() && t->is_object())
    for (const auto& [site, v] : t->items())
      if (v.is_number()) r.site_tolerance[site] = v.get<double>();
  if (const auto reg = doc.find("regressions"); reg != doc.end() && reg->is_array())
    for (const auto& name : *reg)
      if (name.is_string()) r.regressions.push_back(name.get<std::string>());
  r.seconds = number_or(doc, "seconds", 0.0);
  if (r.outcome != ScenarioOutcome::passed) r.problem = problem_line(doc);
  return r;
}

StoredResults read_result_files(const std::vector<std::string>& paths) {
  StoredResults out;
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::string error;
      const size_t before = files.size();
      add_files(p, files, error);
      if (!error.empty()) out.errors.push_back(error);
      else if (files.size() == before)
        out.errors.push_back(p + ": the folder holds no result file (*.json)");
    } else {
      files.push_back(p);
    }
  }
  for (const std::string& f : files) {
    InputFileError error;
    const std::optional<std::string> text = read_input_file(f, kMaxResultBytes, error);
    if (!text) {
      out.errors.push_back(f + ": " + error.message);
      continue;
    }
    try {
      out.records.push_back(record_of(nlohmann::json::parse(*text), f));
    } catch (const std::exception& e) {
      out.errors.push_back(f + ": " + e.what());
    }
  }
  return out;
}

}  // namespace kv
