// load_scenarios.h — parse and validate every scenario file named on the command line (or found in
// a folder named there) before
// anything runs, so one bad file stops the whole command instead of failing half-way.
#pragma once

#include <string>
#include <vector>

#include "scenario/field_setting.h"
#include "scenario/scenario.h"

namespace kv::cli {

struct LoadedScenario {
  std::string path;  // as given on the command line, or found in a folder given there
  Scenario scenario;
};

struct LoadResult {
  std::vector<LoadedScenario> valid;  // in command-line order
  std::vector<std::string> errors;    // one formatted message per invalid file
  bool ok() const { return errors.empty(); }
};

// `args`: files and folders (cli/scenario_files.h: a folder stands for its scenario files);
// `settings`: --set, written into every file before it is read (scenario/field_setting.h).
LoadResult load_scenarios(const std::vector<std::string>& args,
                          const std::vector<FieldSetting>& settings = {});

}  // namespace kv::cli
