// cgroup_memory.h — the memory limit of this process's cgroup and how much of it is in use: the
// tightest of its own cgroup and each ancestor up to the mount, cgroup v2 (memory.max,
// memory.current) first, cgroup v1 (memory.limit_in_bytes, memory.usage_in_bytes) where v2 has no
// memory controller (a hybrid host). The cgroup is the one /proc/self/cgroup names, found under
// its hierarchy's mount point in /proc/self/mountinfo: /sys/fs/cgroup/memory.max is only the
// namespace's root, not necessarily this process's cgroup.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/memory_fit.h"

namespace kv::cli {

// Where one hierarchy keeps this process's memory cgroup.
struct CgroupDir {
  std::string dir;  // the process's cgroup: "/sys/fs/cgroup/user.slice/session-2.scope"
  std::string top;  // the hierarchy's mount point, the last ancestor read: "/sys/fs/cgroup"
  bool v2 = true;   // memory.max / memory.current; else v1's *_in_bytes
};

// From the text of /proc/self/cgroup and /proc/self/mountinfo: the v2 hierarchy's directory
// first, then v1's memory controller's, those that are mounted. Pure, for tests.
std::vector<CgroupDir> memory_cgroup_dirs(const std::string& proc_self_cgroup,
                                          const std::string& mountinfo);

// The tightest limit of `d` and its ancestors up to d.top (the one with the least left), named
// "the cgroup DIR (memory.max)"; nullopt when none sets one ("max", or v1's near-2^63 value).
std::optional<MemoryCap> cgroup_cap(const CgroupDir& d);

// Whether `d` has the memory controller's files at all (a v2 hierarchy on a hybrid host does not).
bool has_memory_files(const CgroupDir& d);

// This process's: the first hierarchy of memory_cgroup_dirs with memory files decides.
std::optional<MemoryCap> this_cgroup_cap();

}  // namespace kv::cli
