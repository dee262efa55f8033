// run_admission.cpp — the sums behind `run -j N`'s decisions.
#include "cli/run_admission.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "report/format.h"

namespace kv::cli {

RunAdmission::RunAdmission(int32_t jobs, MemoryLimits limits, std::vector<int64_t> gpu_free)
    : jobs_(std::max(1, jobs)), limits_(std::move(limits)), gpu_free_(std::move(gpu_free)) {}

// The host's shared limits (available memory, cgroup, --max-memory) against `cost`, with the
// scenarios running now added when `with_running`. The per-process limits (RLIMIT_AS, RLIMIT_DATA)
// count one worker's own memory only: each scenario alone.
std::optional<std::string> RunAdmission::host_refusal(const std::string& name,
                                                      const RunCost& cost,
                                                      bool with_running) const {
  if (!with_running) return memory_refusal(name, cost, limits_);
  RunCost together = cost;
  for (const Running& r : running_) {
    together.memory.insert(together.memory.end(), r.cost.memory.begin(), r.cost.memory.end());
    together.references_at_once += r.cost.references_at_once;
  }
  MemoryLimits shared = limits_;
  shared.address_space.reset();
  shared.data.reset();
  shared.device_free.reset();  // the GPUs: fits_gpu
  return memory_refusal(name, together, shared);
}

bool RunAdmission::fits_gpu(const RunCost& cost, int32_t gpu) const {
  int64_t used = 0;
  for (const Running& r : running_)
    if (r.gpu == gpu) used += r.cost.device_bytes() + kCudaContextBytes;
  return used + cost.device_bytes() + kCudaContextBytes <= gpu_free_[static_cast<size_t>(gpu)];
}

std::optional<int32_t> RunAdmission::place(const std::string& name, const RunCost& cost) const {
  if (static_cast<int32_t>(running_.size()) >= jobs_) return std::nullopt;
  if (!running_.empty() && host_refusal(name, cost, true)) return std::nullopt;
  if (gpu_free_.empty()) return -1;
  std::optional<int32_t> best;
  for (int32_t g = 0; g < static_cast<int32_t>(gpu_free_.size()); ++g) {
    // Alone on a GPU, a scenario goes there whatever the figure says: its worker checks the
    // device's real free memory itself (refusal_alone has said whether any GPU could hold it).
    if (running_on(g) > 0 && !fits_gpu(cost, g)) continue;
    if (!best || running_on(g) < running_on(*best)) best = g;
  }
  return best;
}

std::optional<std::string> RunAdmission::refusal_alone(const std::string& name,
                                                       const RunCost& cost) const {
  if (auto why = host_refusal(name, cost, false)) return why;
  if (gpu_free_.empty()) return std::nullopt;
  const int64_t most = *std::max_element(gpu_free_.begin(), gpu_free_.end());
  if (cost.device_bytes() <= most) return std::nullopt;
  return fmt::format("{} needs about {} of device memory (estimate; `kvcheck validate FILE` "
                     "itemises it) but the GPU with the most has {} free",
                     name, format_bytes(cost.device_bytes()), format_bytes(most));
}

void RunAdmission::started(size_t id, const RunCost& cost, int32_t gpu) {
  running_.push_back({id, cost, gpu});
}

void RunAdmission::finished(size_t id) {
  std::erase_if(running_, [id](const Running& r) { return r.id == id; });
}

size_t RunAdmission::running_on(int32_t gpu) const {
  return static_cast<size_t>(std::count_if(running_.begin(), running_.end(),
                                           [gpu](const Running& r) { return r.gpu == gpu; }));
}

}  // namespace kv::cli
