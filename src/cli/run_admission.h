// run_admission.h — `kvcheck run -j N`: whether the next scenario may start now, and on which
// GPU. A scenario starts when fewer than N run, when its estimated memory (check/run_cost.h)
// fits together with the scenarios running already — the machine's available memory, the
// process group's cgroup and the --max-memory budget are shared by every worker, so they are
// checked against the sum; `ulimit -v`/`-d` are per process, checked for each scenario alone
// before the run starts — and, on a GPU, when its device memory fits that GPU's free memory less
// what the scenarios running there estimate (and each worker's CUDA context). With several GPUs
// each scenario goes to the one running the fewest (ties: the lowest number) among those it fits.
// Scenarios start in the order of the run: one that must wait holds back the ones after it, so a
// large scenario is not starved by small ones. Pure bookkeeping: no process, no device here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/run_cost.h"
#include "cli/memory_fit.h"

namespace kv::cli {

// What one worker's CUDA context and the runtime take on its GPU beyond what the scenario
// allocates (about 500 MiB on an H100/H200 with CUDA 13: measured with nvidia-smi beside an idle
// context), counted for each scenario on a GPU.
inline constexpr int64_t kCudaContextBytes = int64_t{512} << 20;

class RunAdmission {
 public:
  // `jobs`: the most at once (>= 1). `limits`: the host's (memory_limits with no device).
  // `gpu_free`: each GPU's free bytes, as a worker measured them before the run; empty when the
  // run is on the host (or the GPU's figure is unknown: each worker checks its own device then).
  RunAdmission(int32_t jobs, MemoryLimits limits, std::vector<int64_t> gpu_free);

  // Where a run of `cost` would start now: the GPU's number (-1 on the host or with no GPU
  // figures), or nullopt when it must wait for a running scenario to end.
  std::optional<int32_t> place(const std::string& name, const RunCost& cost) const;
  // Why the run cannot start even with nothing else running (it must be refused); nullopt when it
  // can. Checked for every scenario before anything starts.
  std::optional<std::string> refusal_alone(const std::string& name, const RunCost& cost) const;

  void started(size_t id, const RunCost& cost, int32_t gpu);
  void finished(size_t id);
  size_t running() const { return running_.size(); }
  size_t running_on(int32_t gpu) const;

 private:
  struct Running {
    size_t id;
    RunCost cost;
    int32_t gpu;
  };
  std::optional<std::string> host_refusal(const std::string& name, const RunCost& cost,
                                          bool with_running) const;
  bool fits_gpu(const RunCost& cost, int32_t gpu) const;

  int32_t jobs_;
  MemoryLimits limits_;
  std::vector<int64_t> gpu_free_;
  std::vector<Running> running_;
};

}  // namespace kv::cli
