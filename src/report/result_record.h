// result_record.h — a stored result document (report/result_json.h) as the summaries and the
// baseline comparison need it: which run it is (its key), what it found, and each check site's
// largest relative error. `kvcheck summarize` and `kvcheck run --baseline` read result files
// through read_result_files, one model for both.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/run_summary.h"

namespace kv {

struct FailureSpot {
  int64_t epoch = 0, step = 0;
  std::string site;  // the check site ("decode", "prefill_with_context", ...)
  bool operator==(const FailureSpot&) const = default;
};

// One epoch's figures of a run (the result's `epochs` rows), for `summarize --epochs`.
struct EpochFigures {
  int64_t epoch = 0;
  double clean_request_fraction = 0;  // requests whose every output passed
  int64_t nonfinite_outputs = 0;
  double max_rel_error = 0;           // NaN when a non-finite output was compared
  int64_t steps = 0;
  double forward_seconds = 0;
  double zero_init_seconds = 0;       // --zero-init-outputs' memsets; 0 without them
};

struct ResultRecord {
  std::string file;           // where it was read; "" for a run's own document
  std::string name;           // the run's name ("<entry>::<scenario>.seed3")
  std::string scenario_path;  // as the run was given it
  std::string device;         // "host", "cuda"
  std::string backend;        // the plugin's name; "" for the built-in ops
  uint64_t seed = 0;
  std::string verdict, expected;
  ScenarioOutcome outcome = ScenarioOutcome::passed;
  std::optional<FailureSpot> first_failure;
  std::map<std::string, double> site_max_error;  // over every epoch
  std::map<std::string, double> site_tolerance;
  double max_rel_error = 0;   // over every epoch and site
  double seconds = 0;
  std::string problem;        // problem_line() for a run that did not pass; else ""
  std::vector<std::string> regressions;  // switched on in the run
  std::vector<EpochFigures> epochs;

  // What identifies the run across two stores of results: scenario path, name, seed, backend
  // and device.
  std::string key() const;
};

// The record of one result document; throws std::runtime_error naming the field a document that
// is not a kvcheck result lacks.
ResultRecord record_of(const nlohmann::json& doc, const std::string& file = "");

struct StoredResults {
  std::vector<ResultRecord> records;  // in path order (each folder's files sorted)
  std::vector<std::string> errors;    // one per file that is not a readable result
  bool ok() const { return errors.empty(); }
};

// Every result file of `paths`: a file stands for itself, a folder for every *.json under it
// (recursive, sorted; hidden entries skipped).
StoredResults read_result_files(const std::vector<std::string>& paths);

}  // namespace kv
