// suite_file.h — a suite file: every run a CI gate makes, in one place. `kvcheck run SUITE.json`
// runs its entries; each entry names scenario files (files, folders or globs, relative to the
// suite file) and how to run them: its own expectation, regressions off, --fail-fast, seeds,
// labels, and whether it needs a GPU. The repository's own ctest registration and seed sweeps
// read scenarios/suite.json (tests/CMakeLists.txt). The format: docs/ci.md#suite-files.
//
// A file is a suite when it is named `suite.json` or `*.suite.json`; a folder given to `run`,
// `validate` or `list scenarios` skips such files, as it skips `*.schema.json`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli/scenario_files.h"  // is_suite_file
#include "scenario/scenario.h"

namespace kv::cli {

inline constexpr int32_t kSuiteFormat = 1;

struct SuiteEntry {
  std::string id;           // a label (scenario/labels.h): its runs carry it, their results
                            // go under a folder of that name, their names start "<id>::"
  std::string description;
  std::vector<std::string> files;     // the scenario files, sorted within each `paths` item
  std::vector<std::string> relative;  // the same, relative to the suite file's folder
  std::vector<std::string> labels;    // added to each scenario's own
  std::optional<Expectation> expect;  // replaces each scenario's `expect`
  bool regressions_off = false;       // "regressions": "off": every regression off
  bool fail_fast = false;             // each run ends at its first failing check
  std::vector<uint64_t> seeds;        // one run per seed; empty: the scenario's own seed
  bool requires_gpu = false;          // "requires": ["gpu"]: not run where the run is not on one
};

struct SuiteFile {
  std::string path;
  std::string description;
  std::vector<SuiteEntry> entries;
};

// The suite at `path`, every entry's paths expanded and checked; or the first error, as
// "PATH: /entries/2/paths/0: ..." (the scenario files themselves are read by the caller).
std::variant<SuiteFile, std::string> load_suite(const std::string& path);

}  // namespace kv::cli
