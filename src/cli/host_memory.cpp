// host_memory.cpp — the host's and this process's memory limits (see host_memory.h).
#include "cli/host_memory.h"

#include <pthread.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

#include "util/parallel_for.h"
#include "cli/cgroup_memory.h"

namespace kv::cli {
namespace {

// A "Key:   N kB" line of /proc/meminfo or /proc/self/status, in bytes.
std::optional<int64_t> kib_line(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string k;
    int64_t kib = 0;
    if (words >> k >> kib && k == key) return kib * 1024;
  }
  return std::nullopt;
}

std::optional<MemoryCap> rlimit_cap(int resource, const char* name, const char* status_key) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
  constexpr rlim_t kMax = rlim_t{1} << 62;  // int64 arithmetic stays exact below this
  return MemoryCap{.name = name,
                   .limit = static_cast<int64_t>(std::min(r.rlim_cur, kMax)),
                   .used = kib_line("/proc/self/status", status_key).value_or(0)};
}

// glibc's HEAP_MAX_SIZE on 64-bit: the address space a new thread's malloc arena reserves at once.
constexpr int64_t kArenaBytes = int64_t{64} << 20;

// A new thread's stack and guard page as pthread_create maps them by default (from RLIMIT_STACK
// at start: 8 MiB on most systems).
int64_t default_thread_stack() {
  pthread_attr_t attr;
  size_t stack = 8 << 20, guard = 4096;
  if (::pthread_getattr_default_np(&attr) == 0) {
    (void)::pthread_attr_getstacksize(&attr, &stack);
    (void)::pthread_attr_getguardsize(&attr, &guard);
    ::pthread_attr_destroy(&attr);
  }
  return static_cast<int64_t>(stack + guard);
}

}  // namespace

std::optional<MemoryCap> address_space_cap() {
  return rlimit_cap(RLIMIT_AS, "`ulimit -v` (RLIMIT_AS)", "VmSize:");
}

std::optional<MemoryCap> data_cap() {
  return rlimit_cap(RLIMIT_DATA, "`ulimit -d` (RLIMIT_DATA)", "VmData:");
}

MemoryLimits host_memory_limits() {
  MemoryLimits l;
  l.host_available = kib_line("/proc/meminfo", "MemAvailable:");
  l.cgroup = this_cgroup_cap();
  l.address_space = address_space_cap();
  l.data = data_cap();
  l.thread_stack = default_thread_stack();
  l.thread_arena = kArenaBytes;
  l.checker_threads = default_worker_count();
  return l;
}

}  // namespace kv::cli
