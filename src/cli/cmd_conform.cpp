// cmd_conform.cpp — `kvcheck conform --backend X.so [--device host|cuda]`: the first thing a
// backend author runs. Each op the plugin implements against kvcheck's built-in host op on random
// shapes within its declared capabilities (src/conform), the plugin's buffers on the device it is
// loaded for; a per-op table, exit 0 when every op conforms, 1 when one does not, 3 when the
// plugin cannot be loaded or the device cannot be had.
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "conform/conform.h"
#include "plugin/backend_library.h"

namespace kv::cli {

Command add_conform_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "conform",
      "Check each op of a backend plugin against the built-in host op on random shapes "
      "within its declared capabilities");
  auto backend = std::make_shared<std::string>();
  auto backend_option = std::make_shared<std::string>();
  auto opts = std::make_shared<conform::ConformOptions>();
  auto json = std::make_shared<bool>(false);
  auto device_kind = std::make_shared<std::string>("host");
  app->add_option("--backend", *backend, "The backend plugin (a shared library)")->required();
  app->add_option("--device", *device_kind,
                  "The device the plugin is loaded for: host (kDLCPU), cuda (kDLCUDA, GPU 0; "
                  "its buffers in GPU memory), auto (cuda when a GPU is visible)")
      ->check(CLI::IsMember(device_kinds()))
      ->capture_default_str();
  app->add_option("--backend-option", *backend_option, "Option text handed to the plugin's init");
  app->add_option("--seed", opts->seed, "Seed of the random inputs")->capture_default_str();
  app->add_option("--tolerance", opts->attention_tolerance,
                  "Relative L2 tolerance of the attention ops (paged_decode, varlen_attention, "
                  "merge_states, linear_attention)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_flag("--json", *json, "Machine-readable output (schema kvcheck.conform/1)");
  auto action = [backend, backend_option, opts, json, device_kind]() {
    std::unique_ptr<Device> device;
    std::unique_ptr<BackendLibrary> lib;
    try {
      device = make_device(*device_kind);
    } catch (const std::exception& e) {  // DeviceUnavailable, DeviceError
      spdlog::error("cannot run: {}", e.what());
      return static_cast<int>(kExitCannotRun);
    }
    const bool cuda = device->name() == "cuda";
    const DLDevice dl{cuda ? kDLCUDA : kDLCPU, 0};
    try {
      lib = std::make_unique<BackendLibrary>(*backend, dl.device_type, dl.device_id,
                                             *backend_option);
    } catch (const BackendLoadError& e) {
      spdlog::error("cannot run: {}", e.what());
      if (!cuda) spdlog::info("a plugin for the GPU is checked with --device cuda");
      return static_cast<int>(kExitCannotRun);
    }
    conform::ConformReport report;
    try {
      report = conform::run_conform(lib->table(), *opts, *device, dl);
    } catch (const std::invalid_argument& e) {
      spdlog::error("cannot run: {}: {}", lib->name(), e.what());
      return static_cast<int>(kExitCannotRun);
    } catch (const DeviceError& e) {  // the device failed before the plugin ran
      spdlog::error("cannot run: {}", e.what());
      return static_cast<int>(kExitCannotRun);
    }
    if (*json)
      std::cout << conform::conform_json(report) << '\n';
    else
      conform::print_conform(std::cout, report);
    if (!report.all_passed())
      spdlog::warn("a failing op: rerun a scenario with --backend-op OP=builtin to confirm it is "
                   "the one (kvcheck run S.json --backend {} --backend-op OP=builtin)",
                   lib->path());
    return static_cast<int>(report.all_passed() ? kExitOk : kExitMismatch);
  };
  return {app, action};
}

}  // namespace kv::cli
