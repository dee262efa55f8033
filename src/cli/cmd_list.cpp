// cmd_list.cpp — `kvcheck list`: the regressions a scenario can switch on, the ops a device
// implements, and the devices this build can run on.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/device_factory.h"
#include "cli/exit_codes.h"
#include "scenario/regressions.h"

namespace kv::cli {

namespace {

struct OpInfo {
  const char* name;
  const char* does;
};

// The ops of the Device interface (device/device.h), by the names scenarios and reports use.
const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
      {"write_kv", "store the step's K/V rows into their cache slots (padded rows skipped)"},
      {"paged_decode", "split-KV decode over the paged cache, tile by tile, with a state merge; "
                       "MLA decode is this op over the one-head latent cache (v_dim = rank)"},
      {"gather_kv", "copy a sequence's cached context into a contiguous workspace by strides"},
      {"varlen_attention", "causal attention over the new tokens of variable-length prefills"},
      {"merge_states", "combine two attention partials by their log-sum-exp weights"},
      {"linear_attention", "gated linear attention over per-request f32 state blocks of the pool"},
      {"zero_blocks", "zero newly allocated cache blocks (the zero-on-allocation policy)"},
      {"poison_blocks", "fill freed blocks with NaN/Inf/random bits, as stale memory holds"},
      {"quant_fp8", "dynamic fp8 quantisation with a batch-wide amax"},
      {"embed", "token ids to hidden states"},
      {"rms_norm", "RMS normalisation of hidden states"},
      {"linear", "dense projection (q/k/v, output, LM head; grouped: MLA's per-head up-projection)"},
      {"argmax", "greedy next token from the logits"},
  };
  return ops;
}

struct DeviceStatus {
  std::string name;
  bool available;
  std::string note;
};

std::vector<DeviceStatus> device_statuses() {
  std::vector<DeviceStatus> d;
  d.push_back({"host", true, "CPU, always available"});
  if (!cuda_built())
    d.push_back({"cuda", false, "not built (configure with nvcc on PATH, -DKVCHECK_CUDA=ON)"});
  else if (cuda_device_available())
    d.push_back({"cuda", true, "built; a GPU is present"});
  else
    d.push_back({"cuda", false, "built; no GPU visible"});
  return d;
}

nlohmann::json list_json() {
  nlohmann::json regs = nlohmann::json::array(), ops = nlohmann::json::array(),
                 devices = nlohmann::json::array();
  for (const auto& r : all_regressions())
    regs.push_back({{"name", r.name}, {"models", r.models}, {"bug_class", r.bug_class}});
  for (const auto& o : all_ops()) ops.push_back({{"name", o.name}, {"description", o.does}});
  for (const auto& d : device_statuses())
    devices.push_back({{"name", d.name}, {"available", d.available}, {"note", d.note}});
  return {{"schema", "kvcheck.list/1"}, {"regressions", regs}, {"ops", ops}, {"devices", devices}};
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
  }
  size_t width = 0;
  for (const auto& o : all_ops()) width = std::max(width, std::string(o.name).size() + 2);
  os << "\nops:\n";
  for (const auto& o : all_ops()) os << "  " << pad(o.name, width) << o.does << '\n';
  os << "\ndevices (--device):\n";
  for (const auto& d : device_statuses())
    os << "  " << pad(d.name, width) << (d.available ? "available" : "unavailable") << " — "
       << d.note << '\n';
}

}  // namespace

Command add_list_command(CLI::App& parent) {
  CLI::App* app =
      parent.add_subcommand("list", "List the regressions, ops and devices of this build");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Machine-readable output (schema kvcheck.list/1)");
  auto action = [json]() {
    if (*json)
      std::cout << list_json().dump(2) << '\n';
    else
      print_list(std::cout);
    return kExitOk;
  };
  return {app, action};
}

}  // namespace kv::cli
