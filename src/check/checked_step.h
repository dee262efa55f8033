// checked_step.h — one step as the checker judges it, taken out of the engine's hands.
//
// The engine's step observer sees the plan, the outputs and the scheduler's requests only until it
// returns; the next step changes the requests. A CheckedStep owns what the checks read — the plan,
// the outputs, and each chunk's request as the step started it — so the check of step s can run
// while the engine runs step s + 1 (check_pipeline.h).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"
#include "check/op_inputs.h"

namespace kv {

struct CheckedStep {
  int64_t step = 0;              // within the epoch, 0-based
  StepPlan plan;
  StepOutputs outputs;
  // Per plan chunk: its request before the step's sampled tokens were recorded. Only the id,
  // the prompt, the output and max_new_tokens are kept (the block table is not the checks').
  std::vector<Request> requests;
  // The K/V rows the op checks read for the step's checked chunks (op_inputs.h); empty when
  // checks.op_drift is off.
  std::vector<ChunkKv> kv;
};

CheckedStep snapshot_step(int64_t step, const StepPlan& plan, StepOutputs&& outputs,
                          const Scheduler& sched);

}  // namespace kv
