// load_scenarios.cpp — every file through the scenario parser, errors collected, not thrown; a
// file that uses old spellings is warned about here, once.
#include "cli/load_scenarios.h"

#include <exception>
#include <stdexcept>
#include <variant>

#include <spdlog/spdlog.h>

#include "cli/scenario_files.h"
#include "scenario/old_spellings.h"
#include "scenario/parse.h"

namespace kv::cli {

LoadResult load_scenarios(const std::vector<std::string>& args,
                          const std::vector<FieldSetting>& settings) {
  LoadResult out;
  ScenarioFiles files = expand_scenario_paths(args);
  out.errors = std::move(files.errors);
  for (const auto& path : files.files) {
    try {
      auto parsed = load_scenario(path, settings);
      if (auto* err = std::get_if<ScenarioError>(&parsed)) {
        out.errors.push_back(format_error(*err, path));
        continue;
      }
      Scenario& s = std::get<Scenario>(parsed);
      if (!s.old_spellings.empty())
        spdlog::warn("{}", old_spellings_warning(s.old_spellings, path));
      out.valid.push_back({path, std::move(s)});
    } catch (const std::logic_error&) {
      throw;  // an invariant of kvcheck's own: exit 4 (app.cpp)
    } catch (const std::exception& e) {
      // The parser reports through ScenarioError; this only catches what it did not foresee.
      out.errors.push_back(path + ": " + e.what());
    }
  }
  return out;
}

}  // namespace kv::cli
