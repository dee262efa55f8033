#include "check/harness.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "check/checker.h"
#include "check/tolerances.h"
#include "engine/engine.h"
#include "engine/workload.h"
#include "kernels/host/poll.h"

namespace kv {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

RunResult result_header(const Scenario& s, const std::string& device, OpPrecision precision) {
  RunResult result;
  result.scenario = s.name;
  result.scenario_path = s.source_path;
  result.device = device;
  // The host is this machine in any process; a GPU is known only to the device that ran on it.
  if (device == "host") result.device_info = host_device_info();
  result.seed = s.seed;
  result.regressions = s.regressions.names();
  result.expected = s.expect;
  result.tolerances = drift_tolerances(s, precision);
  result.tolerance = largest_tolerance(result.tolerances, s.model.layers);
  result.reference_mode = s.checks.reference;
  if (s.checks.reference == ReferenceMode::sampled)
    result.reference_sampled_requests = s.checks.sampled_requests;
  return result;
}

RunResult run_scenario(const Scenario& s, Device& device, const HarnessHooks& hooks) {
  const auto t_run = std::chrono::steady_clock::now();
  // The host ops run on this thread poll it between rows: one op of a large step can take minutes.
  const host::PollScope host_ops_poll(hooks.interrupt);
  RunResult result = result_header(s, device.name(), device.op_precision());
  if (!result.device_info) result.device_info = device.info();  // the header has the host's
  Engine engine(s, device);
  Checker checker(s, engine.weights(), result.tolerances);
  if (hooks.interrupt) checker.set_interrupt(hooks.interrupt);

  for (int32_t epoch = 1; epoch <= s.workload.epochs; ++epoch) {
    std::vector<Request> requests = make_workload(s.workload, s.seed, s.model.vocab_size);
    checker.begin_epoch(epoch, static_cast<int32_t>(requests.size()));
    if (hooks.on_step) hooks.on_step(epoch, 0, 0);
    int64_t tokens = 0;
    double check_seconds = 0.0;
    const auto t_epoch = std::chrono::steady_clock::now();
    const EpochCounters c = engine.run_epoch(
        requests, [&](int64_t step, const StepPlan& plan, const StepOutputs& out,
                      const Scheduler& sched) {
          const auto t_check = std::chrono::steady_clock::now();
          checker.check_step(step, plan, out, sched);
          check_seconds += seconds_since(t_check);
          tokens += plan.num_rows;
          if (hooks.on_step) hooks.on_step(epoch, step + 1, tokens);
        });
    EpochStats st = checker.end_epoch(requests);
    static_cast<EpochCounters&>(st) = c;
    st.seconds = seconds_since(t_epoch);
    st.check_seconds = check_seconds;
    spdlog::debug("epoch {}: {} steps, {} tokens, {} blocks allocated, clean {}/{}", epoch, st.steps,
                  st.tokens, st.blocks_allocated, st.clean_requests, st.requests);
    if (hooks.on_epoch) hooks.on_epoch(st);
    result.epochs.push_back(st);
  }
  result.first_failure = checker.first_failure();
  result.verdict = result.first_failure ? Verdict::corrupt : Verdict::clean;
  result.seconds = seconds_since(t_run);
  return result;
}

}  // namespace kv
