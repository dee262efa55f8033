// scenario_files.h — the scenario files a command line names: a file stands for itself, a folder
// for every file under it (recursive, sorted by path; `*.schema.json`, suite files and hidden
// entries skipped). Any other file in a folder is taken as a scenario, so a stray file is refused by the
// scenario reader, naming it, instead of being passed over in silence.
#pragma once

#include <string>
#include <vector>

namespace kv::cli {

struct ScenarioFiles {
  std::vector<std::string> files;   // in command-line order, each folder's files sorted
  std::vector<std::string> errors;  // one message per argument that names no scenario
  bool ok() const { return errors.empty(); }
};

ScenarioFiles expand_scenario_paths(const std::vector<std::string>& args);

// Whether `path` names a suite file (cli/suite_file.h) by its name: suite.json or *.suite.json.
// A folder's walk skips them: a suite is run by naming it.
bool is_suite_file(const std::string& path);

}  // namespace kv::cli
