#include "check/checked_step.h"

namespace kv {

CheckedStep snapshot_step(int64_t step, const StepPlan& plan, StepOutputs&& outputs,
                          const Scheduler& sched) {
  CheckedStep c{.step = step, .plan = plan, .outputs = std::move(outputs), .requests = {}, .kv = {}};
  c.requests.reserve(plan.chunks.size());
  for (const ScheduledChunk& chunk : plan.chunks) {
    const Request& r = *sched.find(chunk.request_id);
    Request copy;
    copy.id = r.id;
    copy.prompt = r.prompt;
    copy.output = r.output;
    copy.max_new_tokens = r.max_new_tokens;
    c.requests.push_back(std::move(copy));
  }
  return c;
}

}  // namespace kv
