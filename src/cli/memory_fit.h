// memory_fit.h — whether a scenario's estimated memory (check/run_cost.h) fits where it would
// run: this machine's available memory, this process's limits (its cgroup, `ulimit -v`, `ulimit
// -d`), the device's free memory and a --max-memory budget. A run that does not fit is refused
// before anything is allocated (exit 3: this machine cannot run it), naming the limit and the
// fields to lower; no valid scenario is left to the OOM killer or to its first failed allocation.
#pragma once

#include <algorithm>
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

// A limit on this process's memory and what already counts against it.
struct MemoryCap {
  std::string name;   // for people: "`ulimit -v` (RLIMIT_AS)", "the cgroup /sys/fs/cgroup/a"
  int64_t limit = 0;  // bytes
  int64_t used = 0;   // bytes already counted against it: VmSize, VmData, memory.current
  int64_t left() const { return std::max<int64_t>(0, limit - used); }
};

// Gathered once per check (host_memory.h), compared by memory_refusal.
struct MemoryLimits {
  std::optional<int64_t> host_available = std::nullopt;  // MemAvailable of /proc/meminfo
  std::optional<int64_t> device_free = std::nullopt;     // a GPU's free bytes (none: host)
  std::optional<int64_t> budget = std::nullopt;          // --max-memory: host and device
  bool device_is_host = true;             // the ops' memory is host memory too
  // The tightest memory.max (less memory.current) of this process's cgroup and its ancestors.
  std::optional<MemoryCap> cgroup = std::nullopt;
  // RLIMIT_AS (`ulimit -v`) less VmSize: address space, which the CUDA driver also spends on
  // each cudaMalloc (the device part counts here too).
  std::optional<MemoryCap> address_space = std::nullopt;
  std::optional<MemoryCap> data = std::nullopt;           // RLIMIT_DATA (`ulimit -d`) less VmData
  // What each checker thread beyond the first reserves whether or not it touches it: its stack
  // (and guard page), which counts under RLIMIT_DATA and RLIMIT_AS, and the heap of the malloc
  // arena glibc gives it (64 MiB), which counts under RLIMIT_AS. And the most threads the checker
  // runs on this machine (util/parallel_for.h).
  int64_t thread_stack = 0;
  int64_t thread_arena = 0;
  int64_t checker_threads = 1;
};

// Check: why `cost` does not fit `limits` ("... needs ~X ... has Y ...: lower FIELDS"), or nullopt
// when it fits. `scenario` names it in the message.
std::optional<std::string> memory_refusal(const std::string& scenario, const RunCost& cost,
                                          const MemoryLimits& limits);

// "4096", "512K", "64M", "2T", "8GiB", "8GB": bytes, with binary units, as CLI11's own size
// validator (CLI::AsSizeValue) reads them; nullopt for anything else (zero, negative, a fraction,
// not a number, over 2^62).
std::optional<int64_t> parse_memory_size(const std::string& text);

}  // namespace kv::cli
