// engine.h — the miniature paged-attention engine: a block pool and a scheduler over a model
// runner on a device. One Engine lives for a whole scenario; its cache, prefix cache and captured
// graphs carry over from epoch to epoch, so later epochs run on recycled blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device/device.h"
#include "engine/block_pool.h"
#include "engine/epoch_counters.h"
#include "engine/model_runner.h"
#include "model/model_weights.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"
#include "scenario/scenario.h"

namespace kv {

// Called after every step with what ran and what it produced, before the scheduler records the
// sampled tokens (so the requests still show the state the step started from). The outputs are
// the observer's to keep: the engine has read what it needs of them.
using StepObserver = std::function<void(int64_t step, const StepPlan&, StepOutputs&&,
                                        const Scheduler&)>;


class Engine {
 public:
  // The scenario's regressions are the ones the engine and its ops model.
  Engine(const Scenario& s, Device& dev);

  // Runs `requests` to completion. A corrupted step changes the tokens after it, as in a model.
  // `stop`, when given, is asked before every step: true ends the epoch there, with requests
  // left unfinished and their blocks still held (kvcheck run --fail-fast); run no further epoch
  // on this engine after that.
  EpochCounters run_epoch(std::vector<Request>& requests, const StepObserver& on_step,
                          const std::function<bool()>& stop = {});
  const ModelWeights& weights() const { return weights_; }
  // What the checks read back beside a step's outputs (the cache's rows, op_inputs.h).
  const ModelRunner& runner() const { return runner_; }

 private:
  static PlanLimits plan_limits(const Scenario& s, PadContract pad = {});
  std::vector<LayerKind> zeroed_kinds() const;
  void apply_block_events();
  // The step after `idle_step`, which scheduled nothing, at which something can run.
  int64_t next_busy_step(int64_t idle_step, const Scheduler& sched);

  const Scenario& s_;
  ModelWeights weights_;
  PlanLimits limits_;
  BlockPool pool_;
  ModelRunner runner_;
  uint64_t fill_seed_;
};

}  // namespace kv
