// load_scenarios.cpp — every file through the scenario parser, errors collected, not thrown; a
// file that uses old spellings is warned about here, once.
#include "cli/load_scenarios.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <variant>

#include <spdlog/spdlog.h>

#include "cli/scenario_files.h"
#include "cli/suite_file.h"
#include "scenario/old_spellings.h"
#include "scenario/parse.h"

namespace kv::cli {

namespace {

// A suite entry's settings on one of its scenarios.
void apply_entry(const SuiteEntry& e, Scenario& s) {
  for (const std::string& label : e.labels)
    if (std::find(s.labels.begin(), s.labels.end(), label) == s.labels.end())
      s.labels.push_back(label);
  if (std::find(s.labels.begin(), s.labels.end(), e.id) == s.labels.end()) s.labels.push_back(e.id);
  if (e.expect) s.expect = *e.expect;
  if (e.regressions_off) s.regressions = RegressionSet();
  s.name = e.id + "::" + s.name;
}

// Reads one scenario file into `out` (valid or an error).
void load_one(const std::string& path, const std::vector<FieldSetting>& settings,
              LoadResult& out, const std::shared_ptr<const SuiteEntry>& entry = nullptr,
              const std::string& run_id = "") {
  try {
    auto parsed = load_scenario(path, settings);
    if (auto* err = std::get_if<ScenarioError>(&parsed)) {
      out.errors.push_back(format_error(*err, path));
      return;
    }
    Scenario& s = std::get<Scenario>(parsed);
    if (!s.old_spellings.empty())
      spdlog::warn("{}", old_spellings_warning(s.old_spellings, path));
    if (entry) apply_entry(*entry, s);
    out.valid.push_back(
        {.path = path, .scenario = std::move(s), .variant = {}, .entry = entry, .run_id = run_id});
  } catch (const std::logic_error&) {
    throw;  // an invariant of kvcheck's own: exit 4 (app.cpp)
  } catch (const std::exception& e) {
    // The parser reports through ScenarioError; this only catches what it did not foresee.
    out.errors.push_back(path + ": " + e.what());
  }
}

}  // namespace

LoadResult load_scenarios(const std::vector<std::string>& args,
                          const std::vector<FieldSetting>& settings) {
  LoadResult out;
  std::vector<std::string> plain;  // the files and folders, in order around the suites
  auto flush_plain = [&] {
    ScenarioFiles files = expand_scenario_paths(plain);
    out.errors.insert(out.errors.end(), files.errors.begin(), files.errors.end());
    for (const auto& path : files.files) load_one(path, settings, out);
    plain.clear();
  };
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!is_suite_file(arg) || std::filesystem::is_directory(arg, ec)) {
      plain.push_back(arg);
      continue;
    }
    flush_plain();
    auto suite = load_suite(arg);
    if (auto* why = std::get_if<std::string>(&suite)) {
      out.errors.push_back(*why);
      continue;
    }
    for (SuiteEntry& e : std::get<SuiteFile>(suite).entries) {
      auto entry = std::make_shared<const SuiteEntry>(std::move(e));
      for (size_t i = 0; i < entry->files.size(); ++i)
        load_one(entry->files[i], settings, out, entry, entry->id + "::" + entry->relative[i]);
    }
  }
  flush_plain();
  return out;
}

}  // namespace kv::cli
