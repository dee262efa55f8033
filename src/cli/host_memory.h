// host_memory.h — what this process may still take of the host's memory, gathered in one place
// before a run: MemAvailable of /proc/meminfo, its cgroup's limit (cgroup_memory.h) and its
// `ulimit -v` / `ulimit -d` less what it already maps. memory_fit.h compares an estimate with it.
#pragma once

#include <optional>

#include "cli/memory_fit.h"

namespace kv::cli {

// host_available, cgroup, address_space and data of a MemoryLimits, read now; the device's and the
// budget's fields are left for the caller. A limit that cannot be read is left unset (no limit).
MemoryLimits host_memory_limits();

// RLIMIT_AS less VmSize of /proc/self/status: kvcheck's own libraries, thread stacks and malloc
// arenas already count against an address-space limit. nullopt when unlimited.
std::optional<MemoryCap> address_space_cap();

// RLIMIT_DATA less VmData (private writable mappings: the heap, mmap'd buffers, stacks).
std::optional<MemoryCap> data_cap();

}  // namespace kv::cli
