// run_scenarios.cpp — the `kvcheck run` pipeline: validate all, then run each, then report.
// With a backend (or -j N, or --timeout-per-scenario), each scenario runs in a worker process:
// the worker makes the device, loads the plugin, runs and checks, and sends back its result
// document and console table; the parent writes the result file, prints, and turns a worker that
// crashed, exited or hung into an error verdict named after the op, epoch and step of the shared
// progress record. Under -j N up to N workers run at once (run_at_once).
#include "cli/run_scenarios.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <new>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "backend/backend_spec.h"
#include "check/harness.h"
#include "check/run_cost.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "cli/fault_injection.h"
#include "cli/host_memory.h"
#include "cli/load_scenarios.h"
#include "cli/memory_fit.h"
#include "cli/plugin_worker.h"
#include "cli/worker_reply.h"
#include "cli/reference_choice.h"
#include "cli/run_document.h"
#include "cli/result_paths.h"
#include "cli/run_admission.h"
#include "cli/run_progress.h"
#include "cli/suite_file.h"
#include "util/parallel_for.h"
#include "util/stopwatch.h"
#include "plugin/placement.h"
#include "cli/invocation.h"
#include "plugin/sha256.h"
#include "plugin/worker.h"
#include "kernels/cuda/decode_path_env.h"
#include "report/atomic_write.h"
#include "report/console_table.h"
#include "report/coverage.h"
#include "report/format.h"
#include "report/result_json.h"
#include "report/version.h"
#include "report/baseline.h"
#include "report/junit.h"
#include "report/result_record.h"
#include "report/run_summary.h"

namespace kv::cli {

namespace fs = std::filesystem;

namespace {

// A worker that could not carry out its run has said why on stderr already.
struct WorkerCannotRun : std::runtime_error {
  WorkerCannotRun() : std::runtime_error("the worker could not carry out the run") {}
};

// A worker in which an invariant of kvcheck's own broke (a std::logic_error): exit 4.
struct WorkerInternalError : std::logic_error {
  using std::logic_error::logic_error;
};

// The hint for a run found corrupt where clean was expected, fitting the case: a regression on
// (the corruption may be the point), a backend under the run (narrow it to an op), or neither.
std::string corrupt_hint(const nlohmann::json& result) {
  const auto regressions = result.find("regressions");
  if (regressions != result.end() && regressions->is_array() && !regressions->empty())
    return "a regression is on: if the corruption is the point, pass --expect corrupt; else "
           "rerun with --no-regressions";
  const auto backend = result.find("backend");
  const auto ff = result.find("first_failure");
  if (backend != result.end() && backend->is_object()) {
    const std::vector<std::string> site_ops =
        ff != result.end() && ff->is_object() && ff->contains("ops")
            ? (*ff)["ops"].get<std::vector<std::string>>()
            : std::vector<std::string>{};
    // Only the ops the backend ran: --backend-op OP=builtin cannot take away one it did not.
    std::vector<std::string> suspects;
    for (const std::string& op : site_ops)
      for (const auto& row : backend->value("ops", nlohmann::json::array()))
        if (row.value("op", std::string()) == op && row.value("backend_calls", 0) > 0)
          suspects.push_back(op);
    if (!site_ops.empty() && suspects.empty())
      return fmt::format("none of the ops behind the failing site ({}) ran in the backend: "
                         "kvcheck's own ops disagree with the reference there; rerun without "
                         "--backend, and see the result's first_failure",
                         join(site_ops, ", "));
    return fmt::format("to find the backend op at fault, rerun with --backend-op OP=builtin for "
                       "the ops behind the failing site that the backend ran{}: the failure that "
                       "goes away names it; -v prints per-epoch progress",
                       suspects.empty() ? "" : " (" + join(suspects, ", ") + ")");
  }
  return "no regression is on and no backend is loaded: kvcheck's own ops disagree with the "
         "reference; rerun with -v for per-epoch progress, and see the result's first_failure";
}

// `gaps`: the result's coverage_gaps, what kept the run from reaching its regressions.
void warn_mismatch(const std::string& scenario, Expectation expected, const nlohmann::json& result,
                   const nlohmann::json& gaps) {
  if (expected == Expectation::clean) {
    spdlog::warn("{}: corruption found where the scenario expects clean output", scenario);
    spdlog::warn("  hint: {}", corrupt_hint(result));
    return;
  }
  spdlog::warn("{}: the expected corruption was not found", scenario);
  if (gaps.is_array() && !gaps.empty()) {
    for (const auto& g : gaps)
      spdlog::warn("  hint: regression {} {}", g.value("regression", std::string()),
                   g.value("message", std::string()));
    return;
  }
  spdlog::warn("  hint: check that the regression is on (--regression NAME, `kvcheck list`) "
               "and that the workload reaches it (the result's coverage says what it exercised)");
}

// Inside `catch (...)`: says why the run could not be carried out.
void log_run_failure() {
  try {
    throw;
  } catch (const DeviceUnavailable& e) {
    spdlog::error("{}", e.what());
  } catch (const BackendLoadError& e) {
    spdlog::error("cannot run: {}", e.what());
  } catch (const MemoryRefused& e) {
    spdlog::error("cannot run: {}", e.what());
  } catch (const TimeLimitReached& e) {
    spdlog::error("{}", e.what());
  } catch (const OutOfMemory& e) {
    // No "try --device host": the estimate found it fits (or could not tell), so that is no hint.
    spdlog::error("device out of memory: {}", e.what());
  } catch (const DeviceError& e) {
    spdlog::error("device error: {}", e.what());
    spdlog::error("  hint: the run could not be carried out; rerun with -v, or try --device host");
  } catch (const WriteError& e) {
    spdlog::error("{}", e.what());
    spdlog::error("  hint: choose a writable folder with --out DIR");
  } catch (const std::bad_alloc&) {
    spdlog::error("out of host memory (std::bad_alloc) although the scenario's estimated memory "
                  "fit when the run began (other processes may have taken memory since)");
    spdlog::error("  hint: `kvcheck validate FILE` itemises the estimate with the fields that "
                  "size each item; lower those of the largest items, or pass --max-memory");
  } catch (const std::exception& e) {
    spdlog::error("the run could not be carried out: {}", e.what());
  }
}

// Progress on stderr, the --max-seconds deadline and (in a worker) the shared progress record.
HarnessHooks progress_hooks(const Scenario& s, const Deadline& deadline, ProgressRecord* record) {
  auto progress = std::make_shared<RunProgress>(s.name, estimate_run_cost(s), deadline,
                                                ::isatty(STDERR_FILENO) == 1,
                                                spdlog::should_log(spdlog::level::info));
  HarnessHooks hooks;
  hooks.on_epoch = [progress](const EpochStats& e) { progress->on_epoch(e); };
  hooks.on_step = [progress, record](int32_t epoch, int64_t step, int64_t tokens) {
    if (record) record->set_step(epoch, step);
    progress->on_step(epoch, step, tokens);
  };
  hooks.interrupt = [progress] { progress->check_deadline(); };
  return hooks;
}

// The limits a scenario's estimated memory must fit on `device` (check/memory_fit.h).
MemoryLimits memory_limits(const RunOptions& opts, const Device* device) {
  MemoryLimits l = host_memory_limits();
  l.budget = opts.max_memory;
  if (device) {
    l.device_free = device->free_bytes();
    l.device_is_host = !l.device_free.has_value();
  } else {
    l.device_is_host = opts.device == DeviceKind::host;  // else the worker checks the device's part
  }
  return l;
}

// Check before act: throws MemoryRefused for the first scenario that does not fit.
void refuse_what_does_not_fit(const std::vector<LoadedScenario>& scenarios,
                              const MemoryLimits& limits) {
  for (const auto& l : scenarios) {
    const RunCost cost = estimate_run_cost(l.scenario);
    spdlog::debug("{}: estimated memory {} ({} on the device)", l.scenario.name,
                  format_bytes(cost.total_bytes()), format_bytes(cost.device_bytes()));
    if (auto why = memory_refusal(l.scenario.name, cost, limits)) throw MemoryRefused(*why);
  }
}

// make_device, whose "use --device host" hint for a missing GPU holds only if the host can run
// the scenarios: where it cannot, the message says so instead of leaving the hint bare.
std::unique_ptr<Device> make_device_for(const RunOptions& opts,
                                        const std::vector<LoadedScenario>& scenarios,
                                        int32_t gpu = -1) {
  try {
    return make_device(opts.device, gpu >= 0 ? gpu : opts.device_ordinal);
  } catch (const DeviceUnavailable& e) {
    MemoryLimits host = memory_limits(opts, nullptr);
    host.device_is_host = true;
    for (const auto& l : scenarios)
      if (auto why = memory_refusal(l.scenario.name, estimate_run_cost(l.scenario), host))
        throw DeviceUnavailable(std::string(e.what()) + "; but --device host cannot run it "
                                "either: " + *why);
    throw;
  }
}

// Each file's runs: once per seed (--seeds, else its suite entry's), --repeat times each, and
// its clean twin after a run
// with regressions on (--clean-twins), in that order; the variant names each.
std::vector<LoadedScenario> expand_runs(std::vector<LoadedScenario> files, const RunOptions& opts) {
  auto add_variant = [](LoadedScenario& l, const std::string& v) {
    l.variant += v;
    l.scenario.name += v;
  };
  std::vector<LoadedScenario> runs;
  runs.reserve(files.size() * std::max<size_t>(opts.seeds.size(), 1) *
               static_cast<size_t>(opts.repeat));
  for (const LoadedScenario& l : files) {
    // --seeds, else the suite entry's seeds, else the scenario's own.
    const std::vector<uint64_t>& seeds =
        !opts.seeds.empty() || !l.entry ? opts.seeds : l.entry->seeds;
    for (size_t k = 0; k < std::max<size_t>(seeds.size(), 1); ++k)
      for (int32_t r = 1; r <= opts.repeat; ++r) {
        LoadedScenario run = l;
        if (!seeds.empty()) {
          run.scenario.seed = seeds[k];
          add_variant(run, fmt::format(".seed{}", seeds[k]));
        }
        if (opts.repeat > 1) add_variant(run, fmt::format(".repeat{}", r));
        const bool twin = opts.clean_twins && !run.scenario.regressions.empty();
        if (twin) {
          LoadedScenario clean = run;
          add_variant(clean, ".clean");
          clean.scenario.regressions = RegressionSet();
          clean.scenario.expect = Expectation::clean;
          runs.push_back(std::move(run));
          runs.push_back(std::move(clean));
        } else {
          runs.push_back(std::move(run));
        }
      }
  }
  return runs;
}

// A suite's entries say what each run expects: --expect, --regression and --no-regressions would
// flip that for every entry (its controls too), so they need --force-expect there.
std::optional<std::string> flipped_suite_expectation(const RunOptions& opts,
                                                     const std::vector<LoadedScenario>& runs) {
  const Overrides& o = opts.overrides;
  if (opts.force_expect || (!o.expect && !o.regressions)) return std::nullopt;
  const auto in_suite = std::find_if(runs.begin(), runs.end(),
                                     [](const LoadedScenario& l) { return l.entry != nullptr; });
  if (in_suite == runs.end()) return std::nullopt;
  return fmt::format("{} would replace what the suite's entries expect (entry {}: {} expects "
                     "{}); pass --force-expect to replace it for every run anyway",
                     o.expect ? "--expect" : "--regression/--no-regressions",
                     in_suite->entry->id, in_suite->path, to_string(in_suite->scenario.expect));
}

// Whether a GPU is visible, asked in a worker process: a parent of workers must not start the
// CUDA driver itself (plugin/worker.h), and this one may fork workers later.
bool gpu_visible_in_a_worker() {
  SharedProgress shared;
  const WorkerOutcome out = run_in_worker(
      [] { return std::string(cuda_device_available() ? "yes" : "no"); }, shared.record(),
      std::chrono::seconds(120));
  return out.kind == WorkerOutcome::Kind::finished && out.message == "yes";
}

// The runs of suite entries that need a GPU, dropped (with a warning naming each entry) where
// the run is not on one.
void drop_gpu_entries_off_gpu(const RunOptions& opts, std::vector<LoadedScenario>& runs) {
  const bool any = std::any_of(runs.begin(), runs.end(), [](const LoadedScenario& l) {
    return l.entry && l.entry->requires_gpu;
  });
  if (!any || opts.device == DeviceKind::cuda) return;
  if (opts.device == DeviceKind::automatic && cuda_built() && gpu_visible_in_a_worker()) return;
  std::map<std::string, size_t> dropped;
  std::erase_if(runs, [&](const LoadedScenario& l) {
    if (!l.entry || !l.entry->requires_gpu) return false;
    ++dropped[l.entry->id];
    return true;
  });
  for (const auto& [id, n] : dropped)
    spdlog::warn("suite entry {} needs a GPU and the run is on the host: its {} scenario(s) not "
                 "run (--device cuda or --require-gpu runs them)",
                 id, n);
}

// Validation only: every file parsed, every override and path-selecting environment variable
// checked, nothing run.
bool prepare(const RunOptions& opts, std::vector<LoadedScenario>& scenarios) {
  bool ok = true;
  if (auto error = cuda::decode_path_env_error()) {  // read by the CUDA device, checked here too
    spdlog::error("{}", *error);
    ok = false;
  }
  if (!opts.junit_path.empty()) {
    const fs::path parent = fs::absolute(opts.junit_path).parent_path();
    std::error_code ec;
    if (fs::is_directory(opts.junit_path, ec)) {
      spdlog::error("--junit {}: is a folder; expected the report's file name", opts.junit_path);
      ok = false;
    } else if (!fs::is_directory(parent, ec)) {
      spdlog::error("--junit {}: its folder {} does not exist", opts.junit_path, parent.string());
      ok = false;
    }
  }
  LoadResult loaded = load_scenarios(opts.files, opts.settings);
  for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
  if (!ok || !loaded.ok()) return false;
  scenarios = std::move(loaded.valid);
  if (auto why = apply_selection(scenarios, opts.selection)) {
    spdlog::error("{}", *why);
    return false;
  }
  if (auto why = flipped_suite_expectation(opts, scenarios)) {
    spdlog::error("{}", *why);
    return false;
  }
  drop_gpu_entries_off_gpu(opts, scenarios);
  for (auto& l : scenarios) apply_overrides(opts.overrides, l.scenario);
  scenarios = expand_runs(std::move(scenarios), opts);
  if (opts.shard.count > 1) {
    std::vector<double> work;
    work.reserve(scenarios.size());
    for (const auto& l : scenarios) work.push_back(estimate_run_cost(l.scenario).work);
    std::vector<LoadedScenario> mine;
    for (size_t k : shard_members(work, opts.shard)) mine.push_back(std::move(scenarios[k]));
    spdlog::info("--shard {}/{}: {} of the {} run(s)", opts.shard.index, opts.shard.count,
                 mine.size(), scenarios.size());
    if (mine.empty())
      spdlog::warn("--shard {}/{}: this shard holds no run ({} run(s) over {} shards)",
                   opts.shard.index, opts.shard.count, scenarios.size(), opts.shard.count);
    scenarios = std::move(mine);
  }
  return ok;
}

// The backend's part of a run, for the result.
BackendReport backend_report(const BackendDevice& dev, const Placement& placement) {
  const BackendLibrary& lib = dev.backend();
  BackendReport r{.path = lib.path(),
                  .name = lib.name(),
                  .version = lib.version(),
                  .sha256 = lib.sha256(),
                  .abi_version = static_cast<int32_t>(lib.table().abi_version),
                  .load_seconds = lib.load_seconds(),
                  .ops = {},
                  .layer_kinds = {},
                  .notes = placement.notes};
  std::array<OpCalls, KVCHECK_NUM_OPS> per_op{};
  for (size_t k = 0; k < kCallLayerKinds.size(); ++k) {
    BackendKindReport kind{.layer_kind = kCallLayerKinds[k]};
    for (size_t i = 0; i < per_op.size(); ++i) {
      const OpCalls& c = dev.calls()[k][i];
      per_op[i].backend += c.backend;
      per_op[i].builtin += c.builtin;
      kind.backend_calls += c.backend;
      kind.total_calls += c.backend + c.builtin;
    }
    if (kind.total_calls > 0 && kind.layer_kind != "none") r.layer_kinds.push_back(kind);
  }
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i) {
    const auto op = static_cast<kvcheck_op>(i);
    const OpCalls& c = per_op[static_cast<size_t>(i)];
    const bool used = c.backend + c.builtin > 0;
    // An op placed on the backend that the run never called (the chain the fused prefill
    // replaces) is unused: "on the backend" lists what the backend really ran.
    r.ops.push_back({.op = backend::op_name(op),
                     .placement = !used ? "unused" : dev.placement()[op] ? "backend" : "builtin",
                     .backend_calls = c.backend,
                     .builtin_calls = c.builtin});
  }
  return r;
}

// Runs one scenario on the built-in device, or on a BackendDevice over it with the ops the
// backend takes. Throws BackendLoadError when the backend cannot run it or ran none of it.
// `fail_fast`: --fail-fast, or the run's suite entry says so.
RunResult run_one(Scenario& s, Device& builtin, const std::shared_ptr<BackendLibrary>& lib,
                  const RunOptions& opts, const BackendOptions& b, const Deadline& deadline,
                  bool fail_fast, ProgressRecord* record = nullptr) {
  inject_fault_if_asked();  // tests only (fault_injection.h)
  const ReferenceSetup reference =
      choose_reference(s, opts.reference_device, builtin, opts.max_memory);
  const HarnessHooks hooks = progress_hooks(s, deadline, record);
  const RunControl control{.overlap_checks = !opts.serial_checks,
                           .stop_at_first_failure = fail_fast};
  if (!lib) {
    RunResult result = run_scenario(s, builtin, hooks, reference, control);
    result.coverage_gaps = coverage_gaps(s, run_coverage(result.epochs));
    return result;
  }
  PlacementRequest req{.pinned_builtin = {}, .allow_fallback = b.allow_fallback};
  for (const auto& name : b.pinned) req.pinned_builtin.push_back(*abi_op_from_name(name));
  const Placement placement = place_ops(*lib, req, s);
  BackendDevice device(builtin, lib, placement.ops,
                       BackendWatch{.record = record, .sync_each_op = b.sync_each_op});
  RunResult result = run_scenario(s, device, hooks, reference, control);
  result.coverage_gaps =
      coverage_gaps(s, run_coverage(result.epochs), device.has_paged_prefill());
  result.backend = backend_report(device, placement);
  // A backend that ran nothing judged nothing: never let that read as a pass.
  if (result.backend->backend_calls() == 0)
    throw BackendLoadError(fmt::format(
        "backend {} ran none of scenario {}'s {} op calls (it implements {}; {}): nothing of it "
        "was judged",
        lib->name(), s.name, result.backend->total_calls(),
        lib->implemented_ops().empty() ? "no op" : "ops this scenario does not call",
        placement.notes.empty() ? "none pinned" : "see the notes"));
  return result;
}

// What the parent prints and writes for one scenario.
struct ScenarioReport {
  std::string name;
  Expectation expected = Expectation::clean;
  nlohmann::json doc;
  std::string table;  // the console summary
  bool meets_expectation = false;
  bool error = false;  // verdict error: a backend crashed, exited, failed or hung
};

ScenarioReport report_of(const RunResult& r, const ConsoleStyle& style) {
  std::ostringstream table;
  print_run(table, r, style);
  return {.name = r.scenario,
          .expected = r.expected,
          .doc = to_json(r),
          .table = table.str(),
          .meets_expectation = r.meets_expectation(),
          .error = r.verdict == Verdict::error};
}

// The worker's part: everything that touches the device and the backend. Its reply
// (worker_reply.h): done {document, table} | op_status {op, message} | cannot_run (said on
// stderr) | internal_error {message}.
std::string work_in_worker(Scenario& s, const RunOptions& opts, const BackendOptions& b,
                           const std::string& sha256, const Deadline& deadline, bool fail_fast,
                           ProgressRecord& record, const ConsoleStyle& style, int32_t gpu) {
  try {
    std::unique_ptr<Device> device =
        make_device_for(opts, {LoadedScenario{.path = s.source_path, .scenario = s}}, gpu);
    std::strncpy(record.device, device->name().c_str(), sizeof(record.device) - 1);
    refuse_what_does_not_fit({LoadedScenario{.path = s.source_path, .scenario = s}},
                             memory_limits(opts, device.get()));
    // None: a scenario without a backend in a run with some.
    std::shared_ptr<BackendLibrary> lib;
    if (!b.path.empty()) lib = load_watched(record, b.path, *device, b.options, sha256);
    spdlog::info("running {} on {}{} (worker {}): {} epoch(s), {} request(s) each", s.name,
                 device->name(), lib ? " with backend " + lib->name() : std::string(),
                 ::getpid(), s.workload.epochs, s.workload.num_requests);
    const RunResult result = run_one(s, *device, lib, opts, b, deadline, fail_fast, &record);
    const ScenarioReport rep = report_of(result, style);
    if (lib) destroy_watched(record, std::move(lib));  // plugin code too: watched like its ops
    return worker_reply_text(WorkerReply::done, {{"document", rep.doc}, {"table", rep.table}});
  } catch (const BackendOpError& e) {
    spdlog::error("{}", e.what());
    return worker_reply_text(WorkerReply::op_status, {{"op", e.op}, {"message", e.message}});
  } catch (const OutOfMemory&) {
    log_run_failure();  // the machine's limit: cannot run, whoever allocated
    return worker_reply_text(WorkerReply::cannot_run);
  } catch (const DeviceError& e) {
    // CUDA reports a kernel's fault at a later call: once the backend has launched work, a device
    // error is the backend's (--backend-sync pins it on the op that caused it).
    if (record.calls_started.load() == 0) {
      log_run_failure();
      return worker_reply_text(WorkerReply::cannot_run);
    }
    const std::string last = record.op_name();
    spdlog::error("{}", e.what());
    return worker_reply_text(
        WorkerReply::op_status,
        {{"op", last},
         {"message", fmt::format("the device failed after the backend's ops (last backend op "
                                 "launched: {}, epoch {}, step {}): {}",
                                 last, record.epoch.load(), record.step.load(), e.what())}});
  } catch (const std::logic_error& e) {
    // kvcheck's own invariant (block pool, scheduler): a bug of kvcheck, not of the backend.
    return worker_reply_text(WorkerReply::internal_error, {{"message", e.what()}});
  } catch (...) {
    log_run_failure();
    return worker_reply_text(WorkerReply::cannot_run);
  }
}

std::string where_in_run(const RunError& e) {
  const std::string layer =
      e.layer < 0 ? "" : fmt::format(", layer {} ({})", e.layer, e.layer_kind);
  if (e.epoch == 0) return "while setting up (before epoch 1" + layer + ")";
  return fmt::format("at epoch {}, step {}{}", e.epoch, e.step, layer);
}

std::string error_message(const RunError& e, int32_t timeout_seconds) {
  const std::string who =
      e.op.empty() ? "the worker, outside any backend call," : "backend op " + e.op;
  const std::string where = where_in_run(e);
  if (e.kind == RunErrorKind::crash) return fmt::format("{} crashed ({}) {}", who, e.signal, where);
  if (e.kind == RunErrorKind::exit)
    return fmt::format("{} exited the process (exit code {}) {}", who, e.exit_code, where);
  if (e.kind == RunErrorKind::hang)
    return fmt::format("{} did not return within {} s {} (killed)", who, timeout_seconds, where);
  return fmt::format("{} failed {}: {}", who, where, e.message);
}

// The result of a scenario whose worker ended in an error: what the parent knows of the run.
RunResult error_result(const Scenario& s, const ProgressRecord& record, RunError error,
                       const RunOptions& opts, int32_t timeout_seconds, double seconds) {
  RunResult r =
      result_header(s, record.device[0] ? std::string(record.device) : to_string(opts.device));
  r.verdict = Verdict::error;
  error.epoch = record.epoch.load();
  error.step = record.step.load();
  if (!error.op.empty()) {  // the layer of the call (none for destroy: destroy_watched)
    error.layer = record.layer.load();
    error.layer_kind = record.layer_kind_name();
  }
  error.message = error_message(error, timeout_seconds);
  r.error = std::move(error);
  r.seconds = seconds;
  return r;
}

// One scenario's worker, started: what finish_isolated reads when it has ended.
struct StartedWorker {
  std::unique_ptr<SharedProgress> shared;
  std::unique_ptr<WorkerProcess> process;
  std::chrono::steady_clock::time_point t0;
};

// Forks the worker of one scenario, on GPU `gpu` (-1: as --device says).
StartedWorker start_isolated(Scenario& s, const RunOptions& opts, const BackendOptions& b,
                             const std::string& sha256, const Deadline& deadline, bool fail_fast,
                             const ConsoleStyle& style, int32_t gpu) {
  StartedWorker w{.shared = std::make_unique<SharedProgress>(),
                  .process = nullptr,
                  .t0 = std::chrono::steady_clock::now()};
  ProgressRecord& record = w.shared->record();
  // The work runs in the child, inside this call (fork in the constructor): its references hold.
  w.process = std::make_unique<WorkerProcess>(
      [&] { return work_in_worker(s, opts, b, sha256, deadline, fail_fast, record, style, gpu); },
      record, std::chrono::seconds(b.timeout_seconds), deadline.at);
  return w;
}

// The report of a scenario whose worker has ended; throws WorkerCannotRun when the worker could
// not run it, and TimeLimitReached when it had to be stopped at the deadline (inside a backend
// call).
ScenarioReport finish_isolated(StartedWorker& w, const Scenario& s, const RunOptions& opts,
                               const BackendOptions& b, const Deadline& deadline,
                               const ConsoleStyle& style) {
  const WorkerOutcome out = w.process->outcome();
  const ProgressRecord& record = w.shared->record();
  const auto timeout = std::chrono::seconds(b.timeout_seconds);
  const double seconds = seconds_since(w.t0);
  // The op in progress when the worker died or stuck (none: it was in kvcheck's own code).
  const std::string op = record.in_call() ? record.op_name() : "";
  // Loading the plugin (its constructors, its init) crashed, exited or hung: it cannot be loaded,
  // as when its init refuses (cannot run, exit 3).
  if (op == kLoadCall && out.kind != WorkerOutcome::Kind::stopped) {
    spdlog::error("cannot run: backend {}: {}", b.path, load_failure_text(out, timeout));
    throw WorkerCannotRun();
  }
  RunError error;
  error.op = op;
  switch (out.kind) {
    case WorkerOutcome::Kind::crashed:
      error.kind = RunErrorKind::crash;
      error.signal = signal_name(out.signal);
      break;
    case WorkerOutcome::Kind::exited:
      error.kind = RunErrorKind::exit;
      error.exit_code = out.exit_code;
      break;
    case WorkerOutcome::Kind::hung:
      error.kind = RunErrorKind::hang;
      break;
    case WorkerOutcome::Kind::stopped:  // the run is cut short, as in kvcheck's own code
      throw TimeLimitReached(fmt::format(
          "{} {} reached while running {}: {} at epoch {}, step {}: the worker was stopped{}",
          deadline.option(), deadline.seconds, s.name,
          op.empty() ? "the worker had not ended" : "backend op " + op + " had not returned",
          record.epoch.load(), record.step.load(), deadline.outcome()));
    case WorkerOutcome::Kind::finished: {
      const ParsedReply r = parse_worker_reply(out.message);
      const nlohmann::json& msg = r.body;
      switch (r.reply) {
        case WorkerReply::cannot_run: throw WorkerCannotRun();
        case WorkerReply::internal_error:
          throw WorkerInternalError(msg.at("message").get<std::string>());
        case WorkerReply::done:
          return {.name = s.name,
                  .expected = s.expect,
                  .doc = msg.at("document"),
                  .table = msg.at("table").get<std::string>(),
                  .meets_expectation = msg.at("document").at("meets_expectation").get<bool>(),
                  .error = false};
        case WorkerReply::op_status:
          error.kind = RunErrorKind::status;
          error.op = msg.at("op").get<std::string>();
          error.message = msg.at("message").get<std::string>();
          break;
      }
      break;
    }
  }
  return report_of(error_result(s, record, std::move(error), opts, b.timeout_seconds, seconds),
                   style);
}

// One scenario in a worker process, waited for: finish_isolated's report (and its exceptions).
ScenarioReport run_isolated(Scenario& s, const RunOptions& opts, const BackendOptions& b,
                            const std::string& sha256, const Deadline& deadline, bool fail_fast,
                            const ConsoleStyle& style) {
  StartedWorker w = start_isolated(s, opts, b, sha256, deadline, fail_fast, style, -1);
  while (!w.process->poll(std::chrono::milliseconds(50))) {
  }
  return finish_isolated(w, s, opts, b, deadline, style);
}

// The backend a scenario runs with: the command line's --backend (it wins over the scenario's
// own), none under --no-backend, else the scenario's `backend` (its library relative to the
// scenario file), with the command line's timeout and sync.
BackendOptions backend_for(const RunOptions& opts, const LoadedScenario& l) {
  const BackendSpec& spec = l.scenario.backend;
  if (!opts.backend.path.empty()) {
    if (!spec.library.empty())
      spdlog::info("{}: names backend {}; --backend {} replaces it", l.path, spec.library,
                   opts.backend.path);
    return opts.backend;
  }
  BackendOptions b = opts.backend;
  if (opts.no_backend || spec.library.empty()) return b;
  b.path = backend_relative_to(spec.library, fs::path(l.path).parent_path().string());
  b.pinned = spec.builtin_ops;
  b.allow_fallback = spec.allow_fallback;
  b.options = spec.options;
  return b;
}

// Scenario i's deadline: --max-seconds's, or --timeout-per-scenario's where that comes first.
Deadline scenario_deadline(const Deadline& run, int32_t per_scenario) {
  if (per_scenario <= 0) return run;
  Deadline d{.at = Clock::now() + std::chrono::seconds(per_scenario),
             .seconds = per_scenario,
             .per_scenario = true};
  return run.at && *run.at <= *d.at ? run : d;
}

// The result of a scenario stopped at --timeout-per-scenario: verdict error, kind timeout.
RunResult timeout_result(const Scenario& s, const std::string& device, const Deadline& d,
                         double seconds) {
  RunResult r = result_header(s, device);
  r.verdict = Verdict::error;
  RunError e;
  e.kind = RunErrorKind::timeout;
  e.message = fmt::format("the scenario ran past --timeout-per-scenario {} s and was stopped",
                          d.seconds);
  r.error = std::move(e);
  r.seconds = seconds;
  return r;
}

// Inside `catch (...)` around one scenario: the scenario stopped at its own
// --timeout-per-scenario limit is an error verdict, and the run goes on; anything else (the
// whole run's --max-seconds among them) is rethrown.
ScenarioReport timeout_or_rethrow(const Scenario& s, const std::string& device,
                                  const Deadline& until, double seconds,
                                  const ConsoleStyle& style) {
  if (!until.per_scenario || !until.passed()) throw;
  return report_of(timeout_result(s, device, until, seconds), style);
}

// Inside `catch (...)`: what was thrown, in one line (for the JUnit report).
std::string current_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The JUnit report's frame: when, where, which kvcheck, how it was called.
JunitSuite junit_suite() {
  JunitSuite suite;
  suite.timestamp = utc_timestamp();
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) suite.hostname = host;
  const BuildIdentity& id = build_identity();
  suite.properties = {{"kvcheck.version", id.version},
                      {"kvcheck.commit", id.commit},
                      {"kvcheck.build", describe(id)},
                      {"kvcheck.command_line", join(command_line(), " ")}};
  return suite;
}

// Inside `catch (...)`: the status a failure of the run itself means (after saying why).
int status_of_run_failure() {
  try {
    throw;
  } catch (const WorkerCannotRun&) {
    return kExitCannotRun;  // the worker said why
  } catch (const std::logic_error& e) {
    spdlog::error("{}", internal_error_message(e.what()));
    return kExitInternalError;
  } catch (...) {
    log_run_failure();
    return kExitCannotRun;
  }
}

// The closing lines: the counts, then each scenario that did not pass. On stdout after the tables;
// on stderr under --json, whose stdout is one JSON value.
void print_summary(const RunSummary& summary, std::ostream& os) {
  os << '\n' << summary_line(summary) << '\n';
  for (const auto& line : summary.problems) os << line << '\n';
}

// --fail-fast, or the scenario's suite entry asks for it.
bool fail_fast_for(const RunOptions& opts, const LoadedScenario& l) {
  return opts.fail_fast || (l.entry && l.entry->fail_fast);
}

// How one result was made, taken as its scenario starts, whatever becomes of the run.
struct RunStamp {
  std::string started_at;       // UTC
  std::string scenario_sha256;  // empty: the file is gone since it was read
};

RunStamp stamp_of(const LoadedScenario& l) {
  RunStamp stamp{.started_at = utc_timestamp(), .scenario_sha256 = ""};
  try {
    stamp.scenario_sha256 = sha256_file(l.path);
  } catch (const std::exception&) {  // read once already; gone since: the result says so
  }
  return stamp;
}

// Reports scenario k's result as it comes in.
using RecordRun = std::function<void(size_t k, ScenarioReport& rep, const RunStamp& stamp)>;

// The GPUs a -j run spreads its scenarios over, with each one's free bytes, asked in a worker (a
// parent of workers must not start the CUDA driver): every GPU the runtime sees, GPU N alone under
// --device cuda:N; none on the host, in a host-only build, without a GPU, or when the worker
// could not tell (then each worker checks its own GPU, as one run does).
std::pair<std::vector<int32_t>, std::vector<int64_t>> gpus_for_jobs(const RunOptions& opts) {
  if (opts.device == DeviceKind::host || !cuda_built()) return {};
  SharedProgress shared;
  const WorkerOutcome out = run_in_worker(
      [&] {
        std::string text;
        const int n = cuda_device_count();
        for (int g = 0; g < n; ++g) {
          if (opts.device_ordinal >= 0 && g != opts.device_ordinal) continue;
          const auto free = make_device(DeviceKind::cuda, g)->free_bytes();
          text += fmt::format("{} {}\n", g, free.value_or(0));
        }
        return text;
      },
      shared.record(), std::chrono::seconds(120));
  std::vector<int32_t> ordinals;
  std::vector<int64_t> free;
  if (out.kind != WorkerOutcome::Kind::finished) {
    spdlog::warn("-j {}: could not count the GPUs and their free memory (the worker {}); each "
                 "scenario's worker checks its own GPU",
                 opts.jobs, out.kind == WorkerOutcome::Kind::crashed ? "crashed" : "failed");
    return {};
  }
  std::istringstream in(out.message);
  int32_t g = 0;
  int64_t bytes = 0;
  while (in >> g >> bytes) {
    ordinals.push_back(g);
    free.push_back(bytes);
  }
  return {ordinals, free};
}

// What run_at_once runs, and with what.
struct AtOnce {
  const RunOptions& opts;
  std::vector<LoadedScenario>& scenarios;
  const std::vector<BackendOptions>& backends;
  const std::map<std::string, std::string>& backend_sha256;
  const std::vector<int32_t>& gpu_ordinals;  // RunAdmission's GPU k is GPU gpu_ordinals[k]
  const Deadline& deadline;
  const ConsoleStyle& style;
};

// -j N: the scenarios in worker processes, up to N at once as `admission` lets them start (in the
// order of the run), each reported through `record_run` as it ends. Returns when every scenario
// has ended, or after one when `stop()` says so; workers still running then (or when a failure of
// the run is thrown) are killed, their scenarios not run. `current` is the scenario a thrown
// failure is about.
void run_at_once(const AtOnce& run, RunAdmission& admission, const RecordRun& record_run,
                 const std::function<bool()>& stop, size_t& current) {
  struct Slot {
    size_t k;
    RunStamp stamp;
    Deadline until;
    StartedWorker worker;
  };
  std::vector<std::unique_ptr<Slot>> running;  // destroyed: their workers killed
  const size_t n = run.scenarios.size();
  size_t next = 0;
  std::optional<RunCost> next_cost;  // the next scenario's estimate, kept while it waits
  while (next < n || !running.empty()) {
    while (next < n) {
      current = next;
      Scenario& s = run.scenarios[next].scenario;
      if (run.deadline.passed())
        throw TimeLimitReached(fmt::format("--max-seconds {} reached before running {}: {} of "
                                           "{} scenario(s) started",
                                           run.deadline.seconds, s.name, next, n));
      if (!next_cost) next_cost = estimate_run_cost(s);
      const std::optional<int32_t> gpu = admission.place(s.name, *next_cost);
      if (!gpu) break;  // it waits for memory, a GPU or a free job
      const int32_t ordinal = *gpu >= 0 ? run.gpu_ordinals[static_cast<size_t>(*gpu)] : -1;
      const BackendOptions& b = run.backends[next];
      const bool fail_fast = fail_fast_for(run.opts, run.scenarios[next]);
      auto slot = std::make_unique<Slot>(
          Slot{.k = next,
               .stamp = stamp_of(run.scenarios[next]),
               .until = scenario_deadline(run.deadline, run.opts.timeout_per_scenario),
               .worker = {}});
      slot->worker =
          start_isolated(s, run.opts, b, b.path.empty() ? "" : run.backend_sha256.at(b.path),
                         slot->until, fail_fast, run.style, ordinal);
      admission.started(next, *next_cost, *gpu);
      next_cost.reset();
      spdlog::info("started {} ({} of {}{}; {} running)", s.name, next + 1, n,
                   ordinal >= 0 ? fmt::format(", on cuda:{}", ordinal) : "", admission.running());
      running.push_back(std::move(slot));
      ++next;
    }
    std::vector<WorkerProcess*> processes;
    for (const auto& slot : running) processes.push_back(slot->worker.process.get());
    wait_for_any(processes, std::chrono::milliseconds(50));
    for (size_t r = 0; r < running.size();) {
      Slot& slot = *running[r];
      if (!slot.worker.process->poll(std::chrono::milliseconds(0))) {
        ++r;
        continue;
      }
      current = slot.k;
      const Scenario& s = run.scenarios[slot.k].scenario;
      ScenarioReport rep;
      try {
        rep = finish_isolated(slot.worker, s, run.opts, run.backends[slot.k], slot.until,
                              run.style);
      } catch (...) {
        rep = timeout_or_rethrow(s, to_string(run.opts.device), slot.until,
                                 seconds_since(slot.worker.t0), run.style);
      }
      admission.finished(slot.k);
      const size_t k = slot.k;
      const RunStamp stamp = slot.stamp;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
      record_run(k, rep, stamp);
      if (stop()) return;
    }
  }
}

// Runs every scenario and returns the run's status: each scenario's outcome, and a failure that
// stops the run (the deadline, an unwritable result, a worker that cannot run), combined in the
// order of worse_status (exit_codes.h): a scenario found bad is never hidden by a later one that
// could not run.
int run_all(const RunOptions& opts, std::vector<LoadedScenario>& scenarios,
            const Deadline& deadline) {
  std::vector<std::string> names;
  for (const auto& l : scenarios) names.push_back(l.scenario.name);
  // The stored results to compare with, read before anything runs (a bad one is bad input).
  std::vector<ResultRecord> stored;
  if (!opts.baseline.empty() && !opts.update_baseline) {
    StoredResults read = read_result_files({opts.baseline});
    for (const auto& e : read.errors) spdlog::error("--baseline: {}", e);
    if (!read.ok()) return kExitBadInput;
    stored = std::move(read.records);
  }
  std::vector<ResultRecord> records;  // this run's, for the comparison
  // Each scenario's backend; the options themselves (with every file's path) are shared, so
  // memory stays linear in the number of files.
  std::vector<BackendOptions> backends;
  backends.reserve(scenarios.size());
  for (const auto& l : scenarios) backends.push_back(backend_for(opts, l));
  // Where every result goes, checked before a device is made or a step is run.
  std::vector<fs::path> files, baseline_files;
  if (!opts.no_out || opts.update_baseline) {
    std::vector<ResultKey> keys;
    keys.reserve(scenarios.size());
    for (size_t k = 0; k < scenarios.size(); ++k)
      keys.push_back({.scenario_path = scenarios[k].path,
                      .backend_path = backends[k].path,
                      .variant = scenarios[k].variant,
                      .entry = scenarios[k].entry ? scenarios[k].entry->id : "",
                      .suite_relative = scenarios[k].entry
                                            ? scenarios[k].run_id.substr(
                                                  scenarios[k].entry->id.size() + 2)
                                            : ""});
    const std::vector<fs::path> relative = result_relative_paths(keys);
    if (auto clash = result_collision(keys, relative)) {
      spdlog::error("{}: run them with separate --out folders", *clash);
      return kExitBadInput;
    }
    if (!opts.no_out) files = prepare_result_files(opts.out_dir, relative);
    if (opts.update_baseline) baseline_files = prepare_result_files(opts.baseline, relative);
  }
  // With a backend the parent makes no device (on CUDA it must not initialise the driver before
  // it forks): each worker makes its own, also for the scenarios of the run without a backend.
  // --timeout-per-scenario too: a worker can be killed at its limit, while kvcheck's own code polls
  // it only between steps and rows (a GPU-scale engine's set-up ran 38 s past a 5 s limit).
  // -j N: every scenario in a worker, N at once.
  const bool parallel = opts.jobs > 1 && scenarios.size() > 1;
  const bool isolated =
      parallel || opts.timeout_per_scenario > 0 ||
      std::any_of(backends.begin(), backends.end(),
                  [](const BackendOptions& b) { return !b.path.empty(); });
  std::vector<int32_t> gpu_ordinals;
  std::optional<RunAdmission> admission;  // -j: who starts when, and where
  if (parallel) {
    // N workers at once, each checking on its share of the cores (util/parallel_for.h).
    const unsigned cores = default_worker_count();
    worker_count_limit() = std::max(1u, cores / static_cast<unsigned>(opts.jobs));
    std::vector<int64_t> gpu_free;
    std::tie(gpu_ordinals, gpu_free) = gpus_for_jobs(opts);
    spdlog::info("-j {}: up to {} scenarios at once, each in a worker checking on {} of {} "
                 "cores{}",
                 opts.jobs, opts.jobs, default_worker_count(), cores,
                 gpu_ordinals.size() > 1 ? fmt::format(", spread over {} GPUs",
                                                       gpu_ordinals.size())
                                         : "");
    // Before anything runs: each scenario alone must fit (the host, and the GPU with the most
    // free memory); together they wait for one another.
    admission.emplace(opts.jobs, memory_limits(opts, nullptr), std::move(gpu_free));
    for (const auto& l : scenarios)
      if (auto why = admission->refusal_alone(l.scenario.name, estimate_run_cost(l.scenario)))
        throw MemoryRefused(*why);
  } else if (isolated) {
    // Before anything of a scenario is allocated: host memory and the budget here, a worker's
    // device in the worker.
    refuse_what_does_not_fit(scenarios, memory_limits(opts, nullptr));
  }
  std::unique_ptr<Device> device = isolated ? nullptr : make_device_for(opts, scenarios);
  if (device) refuse_what_does_not_fit(scenarios, memory_limits(opts, device.get()));
  // Each library's digest, once for all its scenarios (a GPU backend can be hundreds of MB); if
  // the file cannot be read, each worker's load says why.
  std::map<std::string, std::string> backend_sha256;
  for (const BackendOptions& b : backends) {
    if (b.path.empty() || backend_sha256.count(b.path)) continue;
    std::string& digest = backend_sha256[b.path];
    if (is_python_backend(b.path)) continue;  // the worker's Python host names the module's
    try {
      digest = sha256_file(b.path);
    } catch (const std::exception&) {
    }
  }

  const ConsoleStyle style = console_style_for(std::cout);
  RunDocument json(opts.json);  // --json: the opening now, each result as it ends
  int status = kExitOk;
  const auto t0 = std::chrono::steady_clock::now();
  RunSummary summary;
  JunitSuite junit = junit_suite();
  // --set, as every result records it.
  nlohmann::json settings = nlohmann::json::array();
  for (const FieldSetting& f : opts.settings)
    settings.push_back({{"pointer", f.pointer}, {"value", nlohmann::json::parse(f.value_json)}});
  size_t written = 0;    // result files
  size_t baselined = 0;  // --update-baseline files
  size_t reported = 0;   // scenarios whose result is in
  std::vector<char> finished(scenarios.size(), 0);
  size_t current = 0;  // the scenario being started or finished: the one a thrown failure is about

  // One scenario's result, as it comes in (under -j in the order the scenarios end): stamped,
  // written, counted, printed whole.
  const RecordRun record_run = [&](size_t k, ScenarioReport& rep, const RunStamp& stamp) {
    // What ran is no longer needed: a long run holds one scenario's result at a time.
    scenarios[k].scenario = Scenario{};
    rep.doc["command_line"] = command_line();
    if (!settings.empty()) rep.doc["settings"] = settings;
    if (!stamp.scenario_sha256.empty()) rep.doc["scenario_sha256"] = stamp.scenario_sha256;
    rep.doc["started_at"] = stamp.started_at;

    if (!opts.no_out) {
      std::error_code ec;
      fs::create_directories(files[k].parent_path(), ec);
      if (ec)
        throw WriteError(fmt::format("cannot create result folder {}: {}",
                                     files[k].parent_path().string(), ec.message()));
      atomic_write(files[k], dump_result(rep.doc));
      spdlog::debug("wrote {}", files[k].string());
      ++written;
    }
    if (opts.update_baseline) {
      std::error_code ec;
      fs::create_directories(baseline_files[k].parent_path(), ec);
      atomic_write(baseline_files[k], dump_result(rep.doc));
      ++baselined;
    }
    if (!opts.baseline.empty() && !opts.update_baseline) records.push_back(record_of(rep.doc));
    summary.add(rep.doc);
    junit.cases.push_back(junit_case(rep.doc, scenarios[k].path));

    if (opts.json) {
      json.add(rep.doc);
    } else {
      if (reported > 0) std::cout << '\n';
      std::cout << rep.table;
    }
    // Each scenario's output whole as it ends: a CI log cut by a kill or timeout keeps every
    // scenario that finished (stdout to a file is fully buffered).
    std::cout.flush();
    ++reported;
    finished[k] = 1;
    if (rep.error && rep.doc["error"]["kind"] == "timeout") {
      // Too slow is bad too (bisect: bad), whatever the scenario expects.
      spdlog::error("{}: {} (exit 1); the run goes on", rep.name,
                    rep.doc["error"]["message"].get<std::string>());
      status = worse_status(status, kExitMismatch);
    } else if (rep.error) {
      // A crash is a regression of the backend, whatever the scenario expects (bisect: bad).
      spdlog::error("{}: {}", rep.name, rep.doc["error"]["message"].get<std::string>());
      spdlog::error("  the backend failed: a regression of the backend (exit 1){}",
                    rep.doc["error"]["kind"] == "crash"
                        ? "; --backend-sync pins an asynchronous fault on the op that caused it"
                        : "");
      status = worse_status(status, kExitMismatch);
    } else if (!rep.meets_expectation) {
      warn_mismatch(rep.name, rep.expected, rep.doc,
                    rep.doc.value("coverage_gaps", nlohmann::json()));
      status = worse_status(status, kExitMismatch);
    }
  };
  // --exitfirst: whether the run ends here, after a scenario that missed its expectation.
  const std::function<bool()> exit_first = [&] {
    if (!opts.exit_first || status == kExitOk || reported == scenarios.size()) return false;
    spdlog::warn("stopping the run at the first scenario that missed its expectation "
                 "(--exitfirst): {} scenario run(s) not run",
                 scenarios.size() - reported);
    return true;
  };

  std::optional<size_t> stopped_at;  // the scenario the run could not go on at
  try {
    if (parallel) {
      run_at_once({.opts = opts,
                   .scenarios = scenarios,
                   .backends = backends,
                   .backend_sha256 = backend_sha256,
                   .gpu_ordinals = gpu_ordinals,
                   .deadline = deadline,
                   .style = style},
                  *admission, record_run, exit_first, current);
    } else {
      for (size_t i = 0; i < scenarios.size(); ++i) {
        current = i;
        Scenario& s = scenarios[i].scenario;
        const bool fail_fast = fail_fast_for(opts, scenarios[i]);
        if (deadline.passed())  // before building the next engine, which can take a while itself
          throw TimeLimitReached(fmt::format("--max-seconds {} reached before running {}: {} of "
                                             "{} scenario(s) done",
                                             deadline.seconds, s.name, i, scenarios.size()));
        // How this result was made, whatever becomes of the run (an error result too).
        const RunStamp stamp = stamp_of(scenarios[i]);
        ScenarioReport rep;
        const Deadline until = scenario_deadline(deadline, opts.timeout_per_scenario);
        const auto scenario_t0 = std::chrono::steady_clock::now();
        try {
          if (isolated) {
            const BackendOptions& b = backends[i];
            rep = run_isolated(s, opts, b, b.path.empty() ? "" : backend_sha256.at(b.path),
                               until, fail_fast, style);
          } else {
            spdlog::info("running {} on {}: {} epoch(s), {} request(s) each", s.name,
                         device->name(), s.workload.epochs, s.workload.num_requests);
            rep = report_of(run_one(s, *device, nullptr, opts, opts.backend, until, fail_fast),
                            style);
          }
        } catch (...) {
          rep = timeout_or_rethrow(s, device ? device->name() : to_string(opts.device), until,
                                   seconds_since(scenario_t0), style);
        }
        record_run(i, rep, stamp);
        if (exit_first()) break;
      }
    }
  } catch (...) {
    if (current < scenarios.size()) {
      stopped_at = current;
      junit.cases.push_back({.name = names[current],
                             .classname = junit_classname(scenarios[current].path),
                             .seconds = 0.0,
                             .kind = JunitKind::error,
                             .type = "cannot_run",
                             .message = current_exception_text(),
                             .detail = "the run could not go on: see kvcheck's stderr"});
    }
    ++summary.could_not_run;
    const int failure = status_of_run_failure();
    if (status == kExitMismatch && failure == kExitCannotRun)
      spdlog::error("the run stopped early, after a scenario that did not meet its expectation: "
                    "exit 1 (a mismatch outranks a run that could not finish)");
    status = worse_status(status, failure);
  }
  summary.not_run = static_cast<int64_t>(scenarios.size() - reported - (stopped_at ? 1 : 0));
  summary.seconds = seconds_since(t0);
  std::ostream& closing = opts.json ? std::cerr : std::cout;
  print_summary(summary, closing);
  nlohmann::json summary_doc = to_json(summary);  // --json's summary; its exit_code comes last
  if (!opts.baseline.empty() && !opts.update_baseline) {
    const BaselineComparison cmp =
        compare_with_baseline(records, stored, opts.baseline_factor);
    summary_doc["baseline"] = to_json(cmp);
    closing << baseline_line(cmp) << " (" << opts.baseline << ")\n";
    for (const auto& c : cmp.changes) closing << c << '\n';
    if (cmp.changed()) status = worse_status(status, kExitMismatch);
  }
  if (opts.update_baseline)
    closing << fmt::format("baseline: {} result(s) written to {}\n", baselined, opts.baseline);
  if (written > 0)
    closing << fmt::format("results: {} file{} in {}\n", written, written == 1 ? "" : "s",
                           opts.out_dir);
  if (!opts.junit_path.empty()) {
    for (size_t k = 0; k < scenarios.size(); ++k) {
      if (finished[k] || k == stopped_at) continue;
      junit.cases.push_back({.name = names[k],
                             .classname = junit_classname(scenarios[k].path),
                             .seconds = 0.0,
                             .kind = JunitKind::skipped,
                             .type = "not_run",
                             .message = opts.exit_first && status == kExitMismatch
                                            ? "not run: --exitfirst ended the run at a miss"
                                            : "not run: the run stopped before it",
                             .detail = ""});
    }
    junit.seconds = summary.seconds;
    try {
      atomic_write(opts.junit_path, junit_xml(junit));
    } catch (const std::exception& e) {
      spdlog::error("--junit {}: {}", opts.junit_path, e.what());
      status = worse_status(status, kExitCannotRun);
    }
  }
  summary_doc["exit_code"] = status;
  json.close(summary_doc);  // after everything that can change the status
  std::cout.flush();
  return status;
}

}  // namespace

int run_scenarios(const RunOptions& opts) {
  Deadline deadline;
  if (opts.max_seconds > 0) {
    deadline.at = Clock::now() + std::chrono::seconds(opts.max_seconds);
    deadline.seconds = opts.max_seconds;
  }
  std::vector<LoadedScenario> scenarios;
  if (!prepare(opts, scenarios)) return kExitBadInput;
  try {
    return run_all(opts, scenarios, deadline);
  } catch (...) {  // before any scenario ran: the result folder, the device, the memory
    return status_of_run_failure();
  }
}

}  // namespace kv::cli
