// memory_fit.h — whether a scenario's estimated memory (check/run_cost.h) fits where it would
// run: this machine's available memory, the device's free memory and a --max-memory budget. A run
// that does not fit is refused before anything is allocated (exit 3: this machine cannot run it),
// naming the fields to lower; no valid scenario is left to the OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "check/run_cost.h"

namespace kv::cli {

// A run refused because its estimated memory does not fit (exit 3).
struct MemoryRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MemoryLimits {
  std::optional<int64_t> host_available = std::nullopt;  // bytes this process may still take
  std::optional<int64_t> device_free = std::nullopt;     // a GPU's free bytes (none: host)
  std::optional<int64_t> budget = std::nullopt;          // --max-memory: host and device
  bool device_is_host = true;             // the ops' memory is host memory too
};

// Bytes of memory this process can still take: /proc/meminfo's MemAvailable, lowered to what the
// cgroup (v2 memory.max - memory.current) still allows; nullopt when neither can be read.
std::optional<int64_t> host_available_bytes();

// Check: why `cost` does not fit `limits` ("... needs ~X ... has Y ...: lower FIELDS"), or nullopt
// when it fits. `scenario` names it in the message.
std::optional<std::string> memory_refusal(const std::string& scenario, const RunCost& cost,
                                          const MemoryLimits& limits);

// "4096", "512K", "64M", "1.5G", "2T", "8GiB", "8GB": bytes, with binary units; nullopt for
// anything else (zero, negative, not a number, over 2^62).
std::optional<int64_t> parse_memory_size(const std::string& text);

}  // namespace kv::cli
