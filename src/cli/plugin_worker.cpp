// plugin_worker.cpp — the worker's side (device, load, work, one JSON message) and the parent's
// reading of how it ended.
#include "cli/plugin_worker.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/device_factory.h"
#include "cli/worker_reply.h"
#include "device/device.h"
#include "plugin/backend_library.h"

namespace kv::cli {
namespace {

// In the worker: everything, caught; the message the parent reads.
std::string work_in_worker(const PluginWorkerSpec& spec, const PluginWork& work,
                           ProgressRecord& record) {
  try {
    std::unique_ptr<Device> device = make_device(spec.device);
    std::strncpy(record.device, device->name().c_str(), sizeof(record.device) - 1);
    std::shared_ptr<BackendLibrary> lib = load_watched(record, spec.path, *device, spec.options);
    nlohmann::json payload = work(*lib, *device, record);
    destroy_watched(record, std::move(lib));
    return worker_reply_text(WorkerReply::done, {{"payload", std::move(payload)}});
  } catch (const BackendLoadError& e) {
    return worker_reply_text(WorkerReply::cannot_run, {{"message", e.what()}});
  } catch (const std::invalid_argument& e) {  // the plugin cannot be used for this work
    return worker_reply_text(WorkerReply::cannot_run, {{"message", e.what()}});
  } catch (const std::logic_error& e) {
    return worker_reply_text(WorkerReply::internal_error, {{"message", e.what()}});
  } catch (const std::bad_alloc&) {
    return worker_reply_text(WorkerReply::cannot_run,
                             {{"message", "out of host memory (std::bad_alloc)"}});
  } catch (const std::exception& e) {  // DeviceUnavailable, DeviceError, ...
    return worker_reply_text(WorkerReply::cannot_run, {{"message", e.what()}});
  }
}

}  // namespace

std::shared_ptr<BackendLibrary> load_watched(ProgressRecord& record, const std::string& path,
                                             const Device& device, const std::string& options,
                                             const std::string& sha256) {
  CallMark load(&record, kLoadCall);
  return std::make_shared<BackendLibrary>(path, device.dl_device_type(), device.dl_device_id(),
                                          options, sha256);
}

void destroy_watched(ProgressRecord& record, std::shared_ptr<BackendLibrary> lib) {
  record.set_layer(-1, "");
  CallMark destroy(&record, kDestroyCall);
  lib.reset();
}

std::string worker_failure_text(const WorkerOutcome& out, std::chrono::seconds timeout) {
  switch (out.kind) {
    case WorkerOutcome::Kind::crashed: return "crashed (" + signal_name(out.signal) + ")";
    case WorkerOutcome::Kind::exited:
      return fmt::format("exited the process (exit code {})", out.exit_code);
    case WorkerOutcome::Kind::hung:
      return fmt::format("did not return within {} s (killed; --backend-timeout)",
                         timeout.count());
    case WorkerOutcome::Kind::stopped: return "was stopped at the deadline";
    case WorkerOutcome::Kind::finished: break;
  }
  return "finished";
}

std::string load_failure_text(const WorkerOutcome& out, std::chrono::seconds timeout) {
  return "loading it " + worker_failure_text(out, timeout) +
         " (dlopen runs the library's constructors, then " + std::string(kLoadCall) +
         "): it cannot be loaded";
}

PluginWorkerResult run_plugin_in_worker(const PluginWorkerSpec& spec, const PluginWork& work) {
  SharedProgress shared;
  ProgressRecord& record = shared.record();
  const WorkerOutcome out = run_in_worker(
      [&] { return work_in_worker(spec, work, record); }, record, spec.timeout);
  PluginWorkerResult r;
  if (out.kind == WorkerOutcome::Kind::finished) {
    const ParsedReply reply = parse_worker_reply(out.message);
    if (reply.reply == WorkerReply::done) {
      r.payload = reply.body.at("payload");
      return r;
    }
    r.kind = reply.reply == WorkerReply::internal_error ? PluginWorkerResult::Kind::internal_error
                                                        : PluginWorkerResult::Kind::cannot_run;
    r.message = reply.body.at("message").get<std::string>();
    return r;
  }
  const std::string op = record.in_call() ? record.op_name() : "";
  if (op == kLoadCall) {
    r.kind = PluginWorkerResult::Kind::cannot_run;
    r.message = "backend " + spec.path + ": " + load_failure_text(out, spec.timeout);
  } else if (!op.empty()) {
    r.kind = PluginWorkerResult::Kind::op_failed;
    r.op = op;
    r.message = worker_failure_text(out, spec.timeout);
  } else {
    r.kind = PluginWorkerResult::Kind::worker_failed;
    r.message = "the worker, outside any backend op, " + worker_failure_text(out, spec.timeout);
  }
  return r;
}

}  // namespace kv::cli
