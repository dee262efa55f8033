// load_scenarios.h — parse and validate every scenario file named on the command line (or found in
// a folder named there) before
// anything runs, so one bad file stops the whole command instead of failing half-way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scenario/field_setting.h"
#include "scenario/scenario.h"

namespace kv::cli {

struct SuiteEntry;

struct LoadedScenario {
  std::string path;  // as given on the command line, or found in a folder given there
  Scenario scenario;
  // What tells this run from the file's other runs in one invocation (--seeds, --repeat, the
  // clean twin): ".seed3", ".repeat2", ".clean", appended to the scenario's name and to its
  // result file's (cli/result_paths.h). Empty: the file's one run.
  std::string variant{};
  // The suite entry the scenario runs under (cli/suite_file.h), with its labels, expectation and
  // regressions already applied and its id leading the name ("<id>::<name>"); null outside one.
  std::shared_ptr<const SuiteEntry> entry{};
  // "<id>::<path relative to the suite file>" in a suite (what -k matches besides the path and
  // the name); empty outside one.
  std::string run_id{};
};

struct LoadResult {
  std::vector<LoadedScenario> valid;  // in command-line order
  std::vector<std::string> errors;    // one formatted message per invalid file
  bool ok() const { return errors.empty(); }
};

// `args`: files, folders (cli/scenario_files.h: a folder stands for its scenario files) and
// suite files (cli/suite_file.h: a suite stands for its entries' scenarios, each entry's applied);
// `settings`: --set, written into every file before it is read (scenario/field_setting.h).
LoadResult load_scenarios(const std::vector<std::string>& args,
                          const std::vector<FieldSetting>& settings = {});

}  // namespace kv::cli
