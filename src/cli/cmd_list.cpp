// cmd_list.cpp — `kvcheck list`: the regressions a scenario can switch on, the ops a device
// implements (ops/op_table.h), the check sites that name a failure and the ops behind each
// (result/check_sites.h), and the devices this build can run on.
#include <algorithm>
#include <iostream>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "cli/backend_info.h"
#include "cli/command.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "cli/list_scenarios.h"
#include "cli/name_option.h"
#include "cli/option_checks.h"
#include "cli/plugin_worker.h"
#include "ops/op_table.h"
#include "report/format.h"
#include "result/check_sites.h"
#include "scenario/regressions.h"

namespace kv::cli {

namespace {

struct DeviceStatus {
  std::string name;
  bool available;
  std::string note;
};

std::vector<DeviceStatus> device_statuses() {
  std::vector<DeviceStatus> d;
  const std::string host = to_string(DeviceKind::host), cuda = to_string(DeviceKind::cuda);
  d.push_back({host, true, "CPU, always available"});
  if (!cuda_built())
    d.push_back({cuda, false, "not built (configure with nvcc on PATH, -DKVCHECK_CUDA=ON)"});
  else if (cuda_device_available())
    d.push_back({cuda, true, "built; a GPU is present"});
  else
    d.push_back({cuda, false, "built; no GPU visible"});
  return d;
}

const char* role_name(OpRole r) {
  return r == OpRole::attention_cache ? "attention_cache" : "dense_model";
}

nlohmann::json list_json() {
  nlohmann::json regs = nlohmann::json::array(), ops = nlohmann::json::array(),
                 sites = nlohmann::json::array(), devices = nlohmann::json::array();
  for (const auto& r : all_regressions()) {
    nlohmann::json needs = nlohmann::json::array();
    for (Mechanism m : r.needs) needs.push_back(mechanism_info(m).name);
    regs.push_back({{"name", r.name}, {"models", r.models}, {"bug_class", r.bug_class},
                    {"level", to_string(r.level)}, {"needs", needs}});
  }
  for (const auto& o : all_device_ops())
    ops.push_back({{"name", o.name}, {"role", role_name(o.role)}, {"description", o.does}});
  for (const auto& c : all_check_sites())
    sites.push_back({{"name", c.name}, {"rows", c.rows}, {"ops", site_op_names(c.site)}});
  for (const auto& d : device_statuses())
    devices.push_back({{"name", d.name}, {"available", d.available}, {"note", d.note}});
  return {{"schema", "kvcheck.list/2"}, {"regressions", regs}, {"ops", ops},
          {"check_sites", sites}, {"devices", devices}};
}

// Names padded to the longest one, so the descriptions line up.
std::string pad(const std::string& name, size_t width) {
  return name + std::string(width > name.size() ? width - name.size() : 0, ' ');
}

void print_list(std::ostream& os) {
  os << "regressions (a scenario's \"regressions\", or --regression NAME):\n";
  for (const auto& r : all_regressions()) {
    os << "  " << r.name << '\n';
    os << "      " << r.models << '\n';
    os << "      class: " << r.bug_class << '\n';
    os << "      level: "
       << (r.level == RegressionLevel::engine
               ? "engine (the engine's policy or metadata: applies to any backend)"
               : "prefill chain (the engine's gather -> varlen -> merge calls: no effect under a "
                 "backend's fused paged_prefill)")
       << '\n';
    std::vector<std::string> needs;
    for (Mechanism m : r.needs) needs.emplace_back(mechanism_info(m).name);
    os << "      needs: " << join(needs, ", ") << " (the result's coverage counts them)\n";
  }
  size_t width = 0;
  for (const auto& o : all_device_ops()) width = std::max(width, o.name.size() + 2);
  for (const auto& c : all_check_sites()) width = std::max(width, c.name.size() + 2);
  for (OpRole role : {OpRole::attention_cache, OpRole::dense_model}) {
    os << (role == OpRole::attention_cache
               ? "\nattention and cache ops (what a backend implements):\n"
               : "\ndense model ops (always kvcheck's own):\n");
    for (const auto& o : all_device_ops())
      if (o.role == role) os << "  " << pad(std::string(o.name), width) << o.does << '\n';
  }
  os << "\ncheck sites (what a failure names, and the ops whose output it checks):\n";
  for (const auto& c : all_check_sites()) {
    os << "  " << pad(std::string(c.name), width) << c.rows << '\n';
    os << "  " << pad("", width) << "ops: " << join(site_op_names(c.site), ", ") << '\n';
  }
  os << "\ndevices (--device):\n";
  for (const auto& d : device_statuses())
    os << "  " << pad(d.name, width) << (d.available ? "available" : "unavailable") << " — "
       << d.note << '\n';
}

// `list --backend`: the plugin is loaded in a worker (cli/plugin_worker.h), which sends back
// its description; kvcheck itself never runs plugin code. Loading that fails, crashes, exits or
// hangs is "cannot run" (exit 3).
int describe_backend(const std::string& path, const std::string& options, DeviceKind device,
                     int32_t timeout, bool json) {
  const PluginWorkerSpec spec{.path = path,
                              .options = options,
                              .device = device,
                              .timeout = std::chrono::seconds(timeout)};
  PluginWorkerResult r;
  try {
    r = run_plugin_in_worker(spec, [](const BackendLibrary& lib, Device&, ProgressRecord&) {
      std::ostringstream text;
      print_backend(text, lib);
      return nlohmann::json{{"json", backend_json(lib)}, {"text", text.str()}};
    });
  } catch (const std::logic_error& e) {  // a worker's reply kvcheck cannot read: its own bug
    spdlog::error("{}", internal_error_message(e.what()));
    return kExitInternalError;
  } catch (const std::exception& e) {  // no worker could be started
    spdlog::error("cannot run: {}", e.what());
    return kExitCannotRun;
  }
  switch (r.kind) {
    case PluginWorkerResult::Kind::done:
      if (json)
        std::cout << nlohmann::json{{"schema", "kvcheck.list/2"}, {"backend", r.payload["json"]}}
                         .dump(2)
                  << '\n';
      else
        std::cout << r.payload["text"].get<std::string>();
      return kExitOk;
    case PluginWorkerResult::Kind::internal_error:
      spdlog::error("{}", internal_error_message(r.message));
      return kExitInternalError;
    case PluginWorkerResult::Kind::op_failed:  // its destroy: it loaded, then failed to unload
      spdlog::error("cannot run: backend {}: {} {}", path, r.op, r.message);
      return kExitCannotRun;
    default:
      spdlog::error("cannot run: {}", r.message);
      return kExitCannotRun;
  }
}

}  // namespace

Command add_list_command(CLI::App& parent) {
  CLI::App* app =
      parent.add_subcommand("list", "List the regressions, ops, check sites and devices");
  auto json = std::make_shared<bool>(false);
  auto backend = std::make_shared<std::string>();
  auto device = std::make_shared<DeviceKind>(DeviceKind::host);
  app->add_flag("--json", *json, "Machine-readable output (schema kvcheck.list/2)");
  CLI::Option* backend_opt = app->add_option(
      "--backend", *backend,
      "Describe this backend plugin instead: name, version, ABI version, declared capabilities "
      "and where each op runs")
      ->check(non_empty_path());
  app->add_option("--device", *device, "The device the backend is loaded for (--backend)")
      ->transform(name_of(kDeviceKindNames, "device"))
      ->default_str(to_string(*device))
      ->needs(backend_opt);
  auto options = std::make_shared<std::string>();
  app->add_option("--backend-option", *options, "Option text handed to the backend's init")
      ->needs(backend_opt);
  auto timeout = std::make_shared<int32_t>(300);
  app->add_option("--backend-timeout", *timeout,
                  "Seconds loading the backend may take before it counts as a hang (--backend)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str()
      ->needs(backend_opt);
  const Command scenarios = add_list_scenarios(*app);
  auto action = [json, backend, device, options, timeout, backend_opt, scenarios]() {
    if (scenarios.app->parsed()) return scenarios.action();
    if (*backend_opt) return describe_backend(*backend, *options, *device, *timeout, *json);
    if (*json)
      std::cout << list_json().dump(2) << '\n';
    else
      print_list(std::cout);
    return static_cast<int>(kExitOk);
  };
  return {app, action};
}

}  // namespace kv::cli
