// cmd_conform.cpp — `kvcheck conform --backend X.so [--device host|cuda]`: the first thing a
// backend author runs. Each op the plugin implements against kvcheck's built-in host op on random
// shapes within its declared capabilities (src/conform), the plugin's buffers on the device it is
// loaded for; a per-op table, exit 0 when every op conforms, 1 when one does not, 3 when the
// plugin cannot be loaded or the device cannot be had.
//
// The plugin runs only in a worker process (cli/plugin_worker.h), as under `run --backend`: an op
// that crashes, exits the process or hangs past --backend-timeout fails that op, and a new worker
// judges the ops it had not reached (each op's inputs come from its own seed, so a rerun op sees
// the same cases). A plugin that crashes, exits or hangs while loading cannot be loaded (exit 3).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "cli/name_option.h"
#include "cli/option_checks.h"
#include "cli/plugin_worker.h"
#include "conform/conform.h"
#include "device/device.h"
#include "plugin/backend_library.h"
#include "plugin/placement.h"

namespace kv::cli {
namespace {

struct ConformRequest {
  PluginWorkerSpec plugin;
  conform::ConformOptions options;
};

// Workers until one returns the whole report: each that dies in an op adds that op to
// failed_before. Returns the exit status; `report` is set when it is 0 or 1.
int conform_in_workers(ConformRequest req, conform::ConformReport& report) {
  for (int attempt = 0; attempt <= KVCHECK_NUM_OPS; ++attempt) {
    const PluginWorkerResult r = run_plugin_in_worker(
        req.plugin, [&req](const BackendLibrary& lib, Device& device, ProgressRecord& record) {
          conform::ConformOptions o = req.options;
          o.record = &record;
          const DLDevice dl{static_cast<DLDeviceType>(device.dl_device_type()),
                            device.dl_device_id()};
          conform::ConformReport rep = conform::run_conform(lib.table(), o, device, dl);
          rep.backend_version = lib.version();  // a Python backend's with its runtime
          return conform::conform_document(rep);
        });
    switch (r.kind) {
      case PluginWorkerResult::Kind::done:
        report = conform::conform_report_from_json(r.payload);
        return report.all_passed() ? kExitOk : kExitMismatch;
      case PluginWorkerResult::Kind::cannot_run:
        spdlog::error("cannot run: {}", r.message);
        if (req.plugin.device == DeviceKind::host)
          spdlog::info("a plugin for the GPU is checked with --device cuda");
        return kExitCannotRun;
      case PluginWorkerResult::Kind::internal_error:
        spdlog::error("{}", internal_error_message(r.message));
        return kExitInternalError;
      case PluginWorkerResult::Kind::worker_failed:
        spdlog::error("backend {}: {}: no report", req.plugin.path, r.message);
        return kExitMismatch;
      case PluginWorkerResult::Kind::op_failed: {
        const auto op = abi_op_from_name(r.op);
        if (!op) {  // its destroy, after every op ran: the report died with the worker
          spdlog::error("backend {}: {} {}: no report", req.plugin.path, r.op, r.message);
          return kExitMismatch;
        }
        spdlog::warn("backend op {} {}; the other ops are judged in a new worker", r.op,
                     r.message);
        req.options.failed_before[*op] = "the backend " + r.message;
        break;
      }
    }
  }
  spdlog::error("backend {}: a worker died in every op", req.plugin.path);
  return kExitMismatch;
}

}  // namespace

Command add_conform_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "conform",
      "Check each op of a backend plugin against the built-in host op on random shapes "
      "within its declared capabilities");
  auto req = std::make_shared<ConformRequest>();
  auto json = std::make_shared<bool>(false);
  auto timeout = std::make_shared<int32_t>(300);
  app->add_option("--backend", req->plugin.path, "The backend plugin (a shared library)")
      ->required()
      ->check(non_empty_path());
  app->add_option("--device", req->plugin.device,
                  "The device the plugin is loaded for: host (kDLCPU), cuda (kDLCUDA, GPU 0; "
                  "its buffers in GPU memory), auto (cuda when a GPU is visible)")
      ->transform(name_of(kDeviceKindNames, "device"))
      ->default_str(to_string(req->plugin.device));
  app->add_option("--backend-option", req->plugin.options,
                  "Option text handed to the plugin's init");
  app->add_option("--seed", req->options.seed, "Seed of the random inputs")
      ->check(uint64_text())
      ->capture_default_str();
  app->add_option("--tolerance", req->options.attention_tolerance,
                  "Relative L2 tolerance of the attention ops (paged_decode, varlen_attention, "
                  "merge_states, linear_attention)")
      ->check(positive_finite())
      ->capture_default_str();
  app->add_option("--backend-timeout", *timeout,
                  "Seconds one op's cases (or loading the plugin) may run before it counts as a "
                  "hang (its worker is killed; that op fails, or the plugin cannot be loaded)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app->add_flag("--json", *json, "Machine-readable output (schema kvcheck.conform/1)");
  // Read from argv by app.cpp (bisect_requested), which maps the exit status: no variable here.
  app->add_flag("--bisect")->description(
      "Exit codes for git bisect run: 125 (skip) instead of 3, 1 (bad) instead of 4");
  auto action = [req, json, timeout]() {
    req->plugin.timeout = std::chrono::seconds(*timeout);
    conform::ConformReport report;
    int status = kExitCannotRun;
    try {
      status = conform_in_workers(*req, report);
    } catch (const std::logic_error& e) {  // a worker's reply kvcheck cannot read: its own bug
      spdlog::error("{}", internal_error_message(e.what()));
      return static_cast<int>(kExitInternalError);
    } catch (const std::exception& e) {  // no worker could be started
      spdlog::error("cannot run: {}", e.what());
    }
    if (status == kExitOk || status == kExitMismatch) {
      if (!report.ops.empty() || status == kExitOk) {
        if (*json)
          std::cout << conform::conform_json(report) << '\n';
        else
          conform::print_conform(std::cout, report);
      }
      if (status == kExitMismatch)
        spdlog::warn("a failing op: rerun a scenario with --backend-op OP=builtin to confirm it "
                     "is the one (kvcheck run S.json --backend {} --backend-op OP=builtin)",
                     req->plugin.path);
    }
    return status;  // mapped for --bisect in app.cpp, like a usage error
  };
  return {app, action};
}

}  // namespace kv::cli
