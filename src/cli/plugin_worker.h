// plugin_worker.h — a backend plugin loaded and used only inside a worker process, for the
// entry points that touch plugin code outside `run` (`conform`, `list --backend`); `run` has its
// own worker loop (run_scenarios.cpp) and shares the wording of failures from here.
//
// The worker makes the device (the parent never initialises CUDA before it forks), loads the
// plugin (dlopen runs its constructors, then kvcheck_backend_init) and runs the work; what the
// work returns (JSON) comes back through the pipe. The parent process never calls plugin code.
// A plugin that crashes, exits (any status) or hangs past the timeout ends only its worker:
//   - while loading: the plugin cannot be loaded (cannot run, exit 3), like an init that refuses;
//   - in an op the work marked on the progress record: that op's failure (a verdict);
//   - elsewhere: the worker's failure, reported as such.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/device_factory.h"
#include "kvcheck/backend.h"
#include "plugin/progress_record.h"
#include "plugin/worker.h"

namespace kv {
class BackendLibrary;
class Device;
}  // namespace kv

namespace kv::cli {

struct PluginWorkerSpec {
  std::string path;         // the plugin
  std::string options;      // handed to its init (--backend-option)
  DeviceKind device = DeviceKind::host;  // resolved in the worker
  std::chrono::seconds timeout{300};  // --backend-timeout: a marked call running longer hangs
};

// The work done with the loaded plugin: `record` is where it marks the ops it runs (CallMark),
// so that a death in one names it. Throws std::invalid_argument when the plugin cannot be used
// for this work (cannot run), std::logic_error for an invariant of kvcheck's own.
using PluginWork =
    std::function<nlohmann::json(const BackendLibrary&, Device&, ProgressRecord& record)>;

struct PluginWorkerResult {
  enum class Kind {
    done,            // payload is what the work returned
    cannot_run,      // message: why (no device, the plugin does not load, crashed loading ...)
    op_failed,       // op: the marked op the worker died or hung in; message: how
    worker_failed,   // the worker died outside any marked op; message: how
    internal_error,  // message: kvcheck's own invariant that broke
  };
  Kind kind = Kind::done;
  nlohmann::json payload;
  std::string op;
  std::string message;
};

// Runs `work` on the plugin in a worker process and waits for it. Throws std::runtime_error when
// no worker can be started (fork, pipe).
PluginWorkerResult run_plugin_in_worker(const PluginWorkerSpec& spec, const PluginWork& work);

// The names a worker's progress record gives the two plugin calls that are not ops: loading it
// (dlopen, which runs the library's constructors, then its init) and its destroy.
inline constexpr const char* kLoadCall = KVCHECK_BACKEND_INIT_SYMBOL;
inline constexpr const char* kDestroyCall = "destroy";

// In a worker: the plugin loaded for `device`, the load marked on `record` as kLoadCall, so that
// a crash, exit or hang there reads as "cannot be loaded". Throws BackendLoadError.
std::shared_ptr<BackendLibrary> load_watched(ProgressRecord& record, const std::string& path,
                                             const Device& device, const std::string& options,
                                             const std::string& sha256 = "");

// In a worker: the plugin's destroy (`lib` must hold the last reference), marked as kDestroyCall
// outside any layer, so that a failure there names the call and no layer.
void destroy_watched(ProgressRecord& record, std::shared_ptr<BackendLibrary> lib);

// How a worker that did not finish ended: "crashed (SIGSEGV)", "exited the process (exit code
// 0)", "did not return within 300 s (killed)".
std::string worker_failure_text(const WorkerOutcome& out, std::chrono::seconds timeout);

// The same, for a worker that ended while loading the plugin, saying what loading runs.
std::string load_failure_text(const WorkerOutcome& out, std::chrono::seconds timeout);

}  // namespace kv::cli
