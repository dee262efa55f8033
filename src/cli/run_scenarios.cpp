// run_scenarios.cpp — the `kvcheck run` pipeline: validate all, then run each, then report.
#include "cli/run_scenarios.h"

#include <filesystem>
#include <iostream>
#include <new>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "check/harness.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "cli/load_scenarios.h"
#include "plugin/placement.h"
#include "kernels/cuda/decode_path_env.h"
#include "report/atomic_write.h"
#include "report/console_table.h"
#include "report/format.h"
#include "report/result_json.h"

namespace kv::cli {

namespace fs = std::filesystem;

std::string result_file_name(const std::string& scenario_name) {
  std::string s = scenario_name.empty() ? "scenario" : scenario_name;
  for (char& c : s) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  if (s == "." || s == "..") s = "scenario";
  return s + ".json";
}

namespace {

void warn_mismatch(const RunResult& r) {
  if (r.expected == Expectation::clean) {
    spdlog::warn("{}: corruption found where the scenario expects clean output", r.scenario);
    spdlog::warn("  hint: rerun with -v for per-epoch progress; if the corruption is the point "
                 "(a regression is on), pass --expect corrupt");
  } else {
    spdlog::warn("{}: the expected corruption was not found", r.scenario);
    spdlog::warn("  hint: check that the regression is on (--regression NAME, `kvcheck list`) "
                 "and that the workload reaches it (epochs > 1, poisoned freed blocks)");
  }
}

HarnessHooks progress_hooks(const std::string& scenario, int32_t epochs) {
  HarnessHooks hooks;
  hooks.on_epoch = [scenario, epochs](const EpochStats& e) {
    spdlog::debug("{}: epoch {}/{}: {}/{} requests clean, {} non-finite, max rel err {}, {}",
                  scenario, e.epoch, epochs, e.clean_requests, e.requests, e.nonfinite_outputs,
                  format_error_value(e.max_rel_error), format_duration(e.seconds));
  };
  return hooks;
}

// Validation only: every file parsed, every override and path-selecting environment variable
// checked, nothing run.
bool prepare(const RunOptions& opts, std::vector<LoadedScenario>& scenarios) {
  bool ok = true;
  if (auto error = cuda::decode_path_env_error()) {  // read by the CUDA device, checked here too
    spdlog::error("{}", *error);
    ok = false;
  }
  LoadResult loaded = load_scenarios(opts.files);
  for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
  if (!ok || !loaded.ok()) return false;
  scenarios = std::move(loaded.valid);
  for (auto& l : scenarios) apply_overrides(opts.overrides, l.scenario);
  return true;
}

// The backend's part of a run, for the result.
BackendReport backend_report(const BackendDevice& dev, const Placement& placement) {
  const BackendLibrary& lib = dev.backend();
  BackendReport r{.path = lib.path(),
                  .name = lib.name(),
                  .version = lib.version(),
                  .sha256 = lib.sha256(),
                  .abi_version = static_cast<int32_t>(lib.table().abi_version),
                  .ops = {},
                  .notes = placement.notes};
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i) {
    const auto op = static_cast<kvcheck_op>(i);
    const OpCalls& c = dev.calls()[static_cast<size_t>(i)];
    const bool used = c.backend + c.builtin > 0;
    r.ops.push_back({.op = backend::op_name(op),
                     .placement = dev.placement()[op] ? "backend" : used ? "builtin" : "unused",
                     .backend_calls = c.backend,
                     .builtin_calls = c.builtin});
  }
  return r;
}

// Runs one scenario on the built-in device, or on a BackendDevice over it with the ops the
// backend takes. Throws BackendLoadError when the backend cannot run it or ran none of it.
RunResult run_one(Scenario& s, Device& builtin, const std::shared_ptr<BackendLibrary>& lib,
                  const BackendOptions& b) {
  const HarnessHooks hooks = progress_hooks(s.name, s.workload.epochs);
  if (!lib) return run_scenario(s, builtin, hooks);
  PlacementRequest req{.pinned_builtin = {}, .allow_fallback = b.allow_fallback};
  for (const auto& name : b.pinned) req.pinned_builtin.push_back(*abi_op_from_name(name));
  const Placement placement = place_ops(*lib, req, s);
  BackendDevice device(builtin, lib, placement.ops);
  RunResult result = run_scenario(s, device, hooks);
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

int run_all(const RunOptions& opts, std::vector<LoadedScenario>& scenarios) {
  std::unique_ptr<Device> device = make_device(opts.device);
  std::shared_ptr<BackendLibrary> lib;
  if (!opts.backend.path.empty())
    lib = std::make_shared<BackendLibrary>(opts.backend.path, device->dl_device_type(),
                                           device->dl_device_id(), opts.backend.options);
  const fs::path out_dir = opts.out_dir;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw WriteError("cannot create result folder " + out_dir.string() + ": " + ec.message());

  const ConsoleStyle style = console_style_for(std::cout);
  nlohmann::json documents = nlohmann::json::array();
  std::set<std::string> written;
  int status = kExitOk;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    Scenario& s = scenarios[i].scenario;
    spdlog::info("running {} on {}{}: {} epoch(s), {} request(s) each", s.name, device->name(),
                 lib ? " with backend " + lib->name() : "", s.workload.epochs,
                 s.workload.num_requests);
    RunResult result = run_one(s, *device, lib, opts.backend);
    nlohmann::json doc = to_json(result);

    const fs::path file = out_dir / result_file_name(result.scenario);
    if (!written.insert(file.string()).second)
      spdlog::warn("{}: another scenario in this run has the same name; {} is overwritten "
                   "(give the scenarios distinct \"name\"s)",
                   scenarios[i].path, file.string());
    atomic_write(file, dump_result(doc));
    spdlog::debug("wrote {}", file.string());

    if (opts.json) {
      documents.push_back(std::move(doc));
    } else {
      if (i > 0) std::cout << '\n';
      print_run(std::cout, result, style);
    }
    if (!result.meets_expectation()) {
      warn_mismatch(result);
      status = kExitMismatch;
    }
  }
  if (opts.json)
    std::cout << dump_result(documents.size() == 1 ? documents[0] : documents);
  std::cout.flush();
  return status;
}

}  // namespace

int run_scenarios(const RunOptions& opts) {
  std::vector<LoadedScenario> scenarios;
  if (!prepare(opts, scenarios)) return kExitBadInput;
  try {
    return run_all(opts, scenarios);
  } catch (const DeviceUnavailable& e) {
    spdlog::error("{}", e.what());
  } catch (const BackendLoadError& e) {
    spdlog::error("cannot run: {}", e.what());
  } catch (const BackendOpError& e) {
    // Until the run moves into a worker process (a crash or hang is then an "error" verdict too),
    // a backend's error status is reported here, as a failure of the backend: exit 1.
    spdlog::error("{}", e.what());
    spdlog::error("  the backend failed: a regression of the backend (exit 1)");
    return kExitMismatch;
  } catch (const DeviceError& e) {
    spdlog::error("device error: {}", e.what());
    spdlog::error("  hint: the run could not be carried out; rerun with -v, or try --device host");
  } catch (const WriteError& e) {
    spdlog::error("{}", e.what());
    spdlog::error("  hint: choose a writable folder with --out DIR");
  } catch (const std::bad_alloc&) {
    spdlog::error("out of memory; try a scenario with fewer blocks or requests");
  } catch (const std::exception& e) {
    spdlog::error("the run could not be carried out: {}", e.what());
  }
  return cannot_run(opts.bisect);
}

}  // namespace kv::cli
