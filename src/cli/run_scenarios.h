// run_scenarios.h — what `kvcheck run` does, independent of how its options were parsed:
// load and validate every file, apply the overrides, run each on one device, report, and decide
// the exit status (exit_codes.h). With --backend each scenario runs in a worker process
// (plugin/worker.h): a plugin that crashes, exits or hangs is an "error" verdict (exit 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/device_factory.h"
#include "cli/overrides.h"
#include "cli/run_selection.h"
#include "reference/reference_choice.h"
#include "scenario/field_setting.h"

namespace kv::cli {

// `--backend` and what goes with it.
struct BackendOptions {
  std::string path;                 // the plugin; empty: no backend, the built-in device runs all
  std::vector<std::string> pinned;  // --backend-op OP=builtin: these ABI ops run built-in
  bool allow_fallback = false;      // ops whose caps cannot take a scenario run built-in
  std::string options;              // --backend-option: handed to the plugin at init
  int32_t timeout_seconds = 300;    // --backend-timeout: a plugin call running longer is a hang
  bool sync_each_op = false;        // --backend-sync: synchronise the device after every call
};

struct RunOptions {
  std::vector<std::string> files;  // scenario files and folders (cli/scenario_files.h)
  DeviceKind device = DeviceKind::host;
  int32_t device_ordinal = -1;  // --device cuda:N: GPU N; -1: the current one
  Overrides overrides;
  std::string out_dir = "results/runs";  // one result file per run (cli/result_paths.h)
  bool no_out = false;                    // --no-out: write no result file
  bool json = false;    // result document(s) on stdout instead of the table
  bool bisect = false;  // exit codes mapped for git bisect run (exit_codes.h; app.cpp maps)
  // Each scenario that switches regressions on runs a second time with them off, expecting clean
  // ("<name>.clean"): with a backend, the clean side is what judges the backend's ops on every
  // shape the regression scenarios cover (MLA, fp8, hybrid pools ...).
  bool clean_twins = false;
  BackendOptions backend;  // --backend ...: replaces every scenario's own `backend`
  bool no_backend = false;  // --no-backend: ignore the scenarios' `backend`
  // --max-memory: refuse a scenario whose estimated memory, host and device together, is larger.
  std::optional<int64_t> max_memory;
  // --max-seconds: past this many seconds of the whole run, stop (exit 3); 0: no limit.
  int32_t max_seconds = 0;
  // --timeout-per-scenario: a scenario running longer is stopped, verdict error (kind timeout),
  // and the run goes on; 0: no limit.
  int32_t timeout_per_scenario = 0;
  // --reference-device: where the float64 reference runs (cli/reference_choice.h).
  ReferenceRequest reference_device = ReferenceRequest::automatic;
  // --serial-checks: check each step before the engine runs the next (by default, on a GPU the
  // check of step s overlaps step s + 1; check/check_pipeline.h).
  bool serial_checks = false;
  // --fail-fast: end each scenario at its first failing check (check/harness.h RunControl).
  bool fail_fast = false;
  // -x/--exitfirst: end the whole run after the first scenario that misses its expectation (or
  // whose backend failed); the scenarios after it are not run.
  bool exit_first = false;
  // --seeds: each scenario runs once per seed, as "<name>.seed<N>" (one result file each); empty:
  // once, with the scenario's own seed (or --seed).
  std::vector<uint64_t> seeds;
  // -k, --label, --exclude-label: which of the files run (cli/run_selection.h).
  Selection selection;
  // --shard I/N: this machine's part of the runs; 1/1: all of them.
  Shard shard;
  // --force-expect: let --expect/--regression/--no-regressions replace a suite entry's own.
  bool force_expect = false;
  // --repeat: each scenario (each seed) runs this many times, as "<name>.repeat<K>".
  int32_t repeat = 1;
  // --set KEY=VALUE: scenario fields changed for the run, as if every file had them.
  std::vector<FieldSetting> settings;
  // --baseline: compare each run with the stored result of its key (report/baseline.h); a change
  // is exit 1. --update-baseline: write this run's results there instead (nothing compared).
  std::string baseline;
  double baseline_factor = 2.0;
  bool update_baseline = false;
  // -j/--jobs: how many scenarios run at once, each in a worker process (cli/run_admission.h
  // says when the next may start, and on which GPU); 1: one after the other.
  int32_t jobs = 1;
  // --junit: also write the run as a JUnit XML report there (report/junit.h); empty: none.
  std::string junit_path;
};

// The exit status before any --bisect mapping (app.cpp maps it): 0, 1, 2, 3, or 4 when an
// invariant of kvcheck's own broke (std::logic_error, in this process or in a worker).
int run_scenarios(const RunOptions& opts);

}  // namespace kv::cli
