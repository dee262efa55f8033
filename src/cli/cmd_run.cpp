// cmd_run.cpp — `kvcheck run FILE...`: its options; the work is in run_scenarios.cpp.
#include <algorithm>
#include <memory>
#include <tuple>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "backend/abi_tensor.h"
#include "cli/command.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "cli/memory_fit.h"
#include "cli/name_option.h"
#include "cli/option_checks.h"
#include "cli/reference_choice.h"
#include "cli/run_scenarios.h"
#include "cli/seed_list.h"
#include "plugin/placement.h"
#include "scenario/field_table.h"
#include "scenario/suggest.h"

namespace kv::cli {

Command add_run_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "run", "Run scenarios and check every output for NaN/Inf and drift from the reference");
  auto opts = std::make_shared<RunOptions>();
  // CLI11 binds to plain values; the optional overrides are filled in after the parse.
  auto seed = std::make_shared<uint64_t>(0);
  auto epochs = std::make_shared<int32_t>(0);
  auto regressions = std::make_shared<std::vector<Regression>>();
  auto expect = std::make_shared<Expectation>();
  auto reference = std::make_shared<ReferenceMode>();
  auto sampled_requests = std::make_shared<int32_t>(0);

  app->add_option("files", opts->files,
                  "Scenario files (JSON); folders: every scenario under one, sorted by path "
                  "(*.schema.json and suite files skipped); suite files (suite.json, "
                  "*.suite.json): their entries' runs")
      ->required();
  auto device_text = std::make_shared<std::string>();
  CLI::Option* device_opt =
      app->add_option("--device", *device_text,
                      "Where the ops run: host, cuda, cuda:N (GPU N), or auto = cuda when a GPU "
                      "is there")
          ->type_name("DEVICE")
          ->check(parsed_by(parse_device, "device"))
          ->default_str(to_string(opts->device));
  auto require_gpu = std::make_shared<bool>(false);
  app->add_flag("--require-gpu", *require_gpu,
                "A run that would not be on a GPU is exit 3, not a quiet host run: --device auto "
                "and no --device mean cuda (for a nightly GPU gate)");
  CLI::Option* seed_opt =
      app->add_option("--seed", *seed, "Replace the scenario's seed (workload and faults)")
          ->check(uint64_text());
  auto settings = std::make_shared<std::vector<std::string>>();
  app->add_option("--set", *settings,
                  "KEY=VALUE: change a scenario field for this run, as if every file had it "
                  "(repeatable): KEY a dotted path (cache.block_size) or a JSON pointer, VALUE "
                  "JSON (else a string); validated like the file, recorded in the result")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)
      ->check(parsed_by(parse_field_setting, "field setting"));
  auto seeds_text = std::make_shared<std::string>();
  app->add_option("--seeds", *seeds_text,
                  "Run each scenario once per seed: a list such as 1-20,33 (one result each, "
                  "<file>.seed<N>.json)")
      ->type_name("LIST")
      ->check(parsed_by(parse_seed_list, "seed list"))
      ->excludes(seed_opt);
  app->add_option("-k", opts->selection.keywords,
                  "Run only the scenarios whose path or name matches PATTERN (repeatable: any): "
                  "a glob (* ? [...]) matching the whole, else a substring")
      ->type_name("PATTERN")
      ->allow_extra_args(false);
  app->add_option("--label", opts->selection.labels,
                  "Run only the scenarios that carry label L (repeatable: any of them)")
      ->type_name("L")
      ->allow_extra_args(false)
      ->check(label_text());
  app->add_option("--exclude-label", opts->selection.excluded,
                  "Leave out the scenarios that carry label L (repeatable)")
      ->type_name("L")
      ->allow_extra_args(false)
      ->check(label_text());
  app->add_flag("--force-expect", opts->force_expect,
                "Let --expect, --regression and --no-regressions replace what a suite file's "
                "entries expect (refused without it: they would flip the controls too)");
  auto shard_text = std::make_shared<std::string>();
  app->add_option("--shard", *shard_text,
                  "Run shard I of N (I/N) of the runs: N machines given the same files and "
                  "options run disjoint parts whose union is the whole, balanced by estimated work")
      ->type_name("I/N")
      ->check(parsed_by(parse_shard, "shard"));
  app->add_option("--repeat", opts->repeat,
                  "Run each scenario (each seed) N times with the same seed (one result each, "
                  "<file>.repeat<K>.json): a verdict that changes between them is nondeterminism")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  // The range the scenario parser accepts for the field it replaces (field_table.h).
  const IntegerBounds epochs_range = integer_bounds(scenario_field("/workload/epochs"));
  CLI::Option* epochs_opt = app->add_option("--epochs", *epochs, "Replace workload.epochs")
                                ->check(CLI::Range(epochs_range.min, epochs_range.max));
  CLI::Option* regression_opt = app->add_option(
      "--regression", *regressions,
      "Turn on this regression (repeatable); replaces the list of every scenario of the run. "
      "See `kvcheck list`")
      ->transform(regression_name())
      ->type_name("NAME")  // the names: `kvcheck list` (a one-line list would not fit --help)
      // One name per flag, so `run --regression X file.json` does not read the file as a name.
      ->allow_extra_args(false);
  auto no_regressions = std::make_shared<bool>(false);
  CLI::Option* none_opt = app->add_flag("--no-regressions", *no_regressions,
                                        "Run every scenario of the run with every regression off");
  none_opt->excludes(regression_opt);
  CLI::Option* expect_opt =
      app->add_option("--expect", *expect, "Replace the expected verdict of every scenario of the run (controls too)")
          ->transform(name_of(kExpectationNames, "expectation"));
  app->add_flag("--zero-init-outputs", opts->overrides.zero_init_outputs,
                "Zero the attention outputs before every step (the seed-001 mitigation); the run "
                "reports what it costs per step");
  CLI::Option* reference_opt =
      app->add_option("--reference", *reference,
                      "Replace checks.reference: full = every request against the float64 "
                      "reference; sampled = a seeded sample per epoch, the rest only for NaN/Inf; "
                      "auto = full where the reference is on a GPU and fits, else sampled")
          ->transform(name_of(kReferenceModeNames, "reference mode"));
  const IntegerBounds sampled_range = integer_bounds(scenario_field("/checks/sampled_requests"));
  CLI::Option* sampled_opt =
      app->add_option("--sampled-requests", *sampled_requests,
                      "Replace checks.sampled_requests (requests per epoch checked against the "
                      "reference); implies --reference sampled (unless auto), refused with "
                      "--reference full")
          ->check(CLI::Range(sampled_range.min, sampled_range.max));
  app->add_option("--reference-device", opts->reference_device,
                  "Where the float64 reference runs: host (CPU threads), cuda (float64 kernels "
                  "on the GPU, each request's history kept there), auto = cuda when the run is "
                  "on cuda")
      ->default_str("auto")
      ->transform(name_of(kReferenceRequestNames, "reference device"));
  app->add_flag("--serial-checks", opts->serial_checks,
                "Check each step before the engine runs the next. By default, on a GPU, the "
                "checks of step s run while the engine runs step s + 1 (same verdict, less "
                "waiting); on the host device they never overlap");
  app->add_flag("--fail-fast", opts->fail_fast,
                "End each scenario at its first failing check: the verdict and first failure "
                "are final (every step before it was checked), the steps and epochs after it "
                "are not run. A clean scenario runs whole. For CI gates and git bisect run");
  app->add_option("--junit", opts->junit_path,
                  "Also write the run as a JUnit XML report to FILE (one testcase per scenario "
                  "run; failures, errors and skipped as the summary counts them)")
      ->type_name("FILE")
      ->check(non_empty_path());
  CLI::Option* baseline_opt =
      app->add_option("--baseline", opts->baseline,
                      "Compare each run with the stored result of the same scenario path, name, "
                      "seed, backend and device (a folder of results, or one file): a changed "
                      "verdict or first failure, or a site's largest error grown past "
                      "--baseline-factor and a tenth of its tolerance, is exit 1")
          ->type_name("DIR|FILE")
          ->check(non_empty_path());
  app->add_option("--baseline-factor", opts->baseline_factor,
                  "How much a site's largest relative error may grow before it is a change")
      ->check(CLI::Range(1.0, 1e6))
      ->needs(baseline_opt)
      ->capture_default_str();
  app->add_flag("--update-baseline", opts->update_baseline,
                "Write this run's results into the --baseline folder (as --out names them), "
                "replacing the stored ones, instead of comparing")
      ->needs(baseline_opt);
  app->add_flag("-x,--exitfirst", opts->exit_first,
                "End the whole run after the first scenario that misses its expectation (or "
                "whose backend failed): the scenarios after it are not run");
  CLI::Option* out_opt =
      app->add_option("--out", opts->out_dir,
                          "Folder for the result files: <file>[.<backend>][.seed<N>].json, "
                          "<file> the scenario's path below the folder the run's files share")
          ->check(non_empty_path())
          ->capture_default_str();
  app->add_flag("--no-out", opts->no_out,
                "Write no result file (the tables, --json and --junit still report the run)")
      ->excludes(out_opt);
  app->add_flag("--json", opts->json,
                "Print one JSON document (kvcheck.run/1: results, summary), not tables");
  app->add_flag("--clean-twins", opts->clean_twins,
                "Also run each scenario that has regressions on with them off, expecting clean "
                "(as <name>.clean): the side that judges a backend's ops on its shapes");
  auto max_memory = std::make_shared<std::string>();
  CLI::Option* max_memory_opt =
      app->add_option("--max-memory", *max_memory,
                      "Refuse (exit 3) a scenario whose estimated memory, host and device "
                      "together (`kvcheck validate` shows it), is above SIZE: bytes or "
                      "K/M/G/T (binary units), e.g. 8G")
          ->type_name("SIZE")
          ->check(CLI::Validator(
              [](std::string& v) {
                return parse_memory_size(v) ? std::string()
                                            : "expected a size such as 512M or 8G, got " + v;
              },
              "SIZE", "memory size"));
  app->add_option("--max-seconds", opts->max_seconds,
                  "Stop after N seconds of the whole run (exit 3), saying how far it got; the "
                  "scenario then running writes no result file (for CI gates)")
      ->check(CLI::Range(1, 31'536'000));
  app->add_option("-j,--jobs", opts->jobs,
                  "Run N scenarios at once, each in a worker process, as memory (and on several "
                  "GPUs, each GPU's) allows; each prints whole as it ends")
      ->type_name("N")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app->add_option("--timeout-per-scenario", opts->timeout_per_scenario,
                  "Stop a scenario that runs longer than N seconds: verdict error (timeout; "
                  "exit 1, an error in JUnit), and the run goes on with the next")
      ->type_name("N")
      ->check(CLI::Range(1, 31'536'000));
  app->add_flag("--bisect", opts->bisect,
                "Exit codes for git bisect run: 125 (skip) instead of 2 or 3, 1 (bad) instead "
                "of 4; see Exit codes below");
  CLI::Option* backend_opt = app->add_option(
      "--backend", opts->backend.path,
      "Put this backend plugin (a shared library, include/kvcheck/backend.h) under the "
      "scenarios: the ops it implements run on it, the rest on --device (replaces a scenario's "
      "own \"backend\")")
      ->check(non_empty_path());
  app->add_flag("--no-backend", opts->no_backend,
                "Run every op on the built-in device, also for scenarios that name a backend")
      ->excludes(backend_opt);
  const std::vector<std::string> ops = backend::op_names();
  app->add_option("--backend-op", opts->backend.pinned,
                  "OP=builtin: run this op on the built-in device although the backend has it "
                  "(repeatable; to find which op is wrong)")
      ->allow_extra_args(false)
      ->transform(CLI::Validator(
          [ops](std::string& v) {
            const auto eq = v.find('=');
            const std::string op = v.substr(0, eq);
            if (eq == std::string::npos || v.substr(eq + 1) != "builtin")
              return "expected OP=builtin, got " + v;
            if (std::find(ops.begin(), ops.end(), op) == ops.end())
              return "unknown op \"" + op + "\"" + suggestion_tail(op, ops);
            v = op;
            return std::string();
          },
          "OP=builtin", "backend op"))
      ->needs(backend_opt);
  app->add_flag("--allow-fallback", opts->backend.allow_fallback,
                "Run an op on the built-in device when the backend's capabilities cannot take the "
                "scenario, instead of refusing to run (the result says which)")
      ->needs(backend_opt);
  app->add_option("--backend-option", opts->backend.options,
                  "Text handed to the backend at init (its own options)")
      ->needs(backend_opt);
  // These two apply to a scenario's own backend too.
  app->add_option("--backend-timeout", opts->backend.timeout_seconds,
                  "Seconds a backend op call may run before it counts as a hang (the worker is "
                  "killed; verdict error)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app->add_flag("--backend-sync", opts->backend.sync_each_op,
                "Synchronise the device after every backend op call, so that an asynchronous "
                "fault is pinned on the op that caused it (slower)");

  auto action = [=]() {
    RunOptions o = *opts;
    if (!device_text->empty())
      std::tie(o.device, o.device_ordinal) =
          std::get<std::pair<DeviceKind, int>>(parse_device(*device_text));
    if (*seed_opt) o.overrides.seed = *seed;
    if (*epochs_opt) o.overrides.epochs = *epochs;
    if (*regression_opt) o.overrides.regressions = RegressionSet(*regressions);
    if (*no_regressions) o.overrides.regressions = RegressionSet{};
    if (*expect_opt) o.overrides.expect = *expect;
    if (*reference_opt) o.overrides.reference = *reference;
    if (*sampled_opt) o.overrides.sampled_requests = *sampled_requests;
    if (*max_memory_opt) o.max_memory = parse_memory_size(*max_memory);
    for (const auto& text : *settings)
      o.settings.push_back(std::get<FieldSetting>(parse_field_setting(text)));
    if (!shard_text->empty()) o.shard = std::get<Shard>(parse_shard(*shard_text));
    if (!seeds_text->empty()) o.seeds = std::get<std::vector<uint64_t>>(parse_seed_list(*seeds_text));
    if (*require_gpu) {
      if (device_opt->count() > 0 && o.device == DeviceKind::host) {
        spdlog::error("--require-gpu: --device host runs on the CPU; pass --device cuda or auto");
        return static_cast<int>(kExitBadInput);
      }
      o.device = DeviceKind::cuda;
    }
    if (auto error = check_reference_overrides(o.overrides)) {
      spdlog::error("{}", *error);
      return static_cast<int>(kExitBadInput);
    }
    return run_scenarios(o);
  };
  return {app, action};
}

}  // namespace kv::cli
