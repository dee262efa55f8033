#include "check/harness.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "check/check_pipeline.h"
#include "check/checker.h"
#include "check/op_inputs.h"
#include "reference/host/host_reference.h"
#include "check/tolerances.h"
#include "engine/engine.h"
#include "util/stopwatch.h"
#include "engine/workload.h"
#include "kernels/host/poll.h"
#include "result/check_sites.h"

namespace kv {
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

RunResult run_scenario(const Scenario& given, Device& device, const HarnessHooks& hooks,
                       const ReferenceSetup& reference, const RunControl& control) {
  // The op checks (op_checker.h) compute on the CPU, beside the CPU reference. With the GPU
  // reference they would cost more than it does (the same O(length²) per request and layer, on
  // the CPU): they are off there until they have a GPU implementation, and the result says so
  // (no op_check).
  Scenario s = given;
  if (s.checks.op_drift && reference.device != ReferenceDevice::host) {
    s.checks.op_drift = false;
    spdlog::info("{}: the op checks (checks.op_drift) run beside the CPU reference only "
                 "(--reference-device host): off with the GPU reference",
                 s.name);
  }
  if (s.checks.reference == ReferenceMode::automatic)
    throw std::logic_error("run_scenario: checks.reference \"auto\" was not resolved");
  const auto t_run = std::chrono::steady_clock::now();
  // The host ops run on this thread poll it between rows: one op of a large step can take minutes.
  const host::PollScope host_ops_poll(hooks.interrupt);
  RunResult result = result_header(s, device.name(), device.op_precision());
  for (const TighterSite& t : site_tolerances_below_table(s, device.op_precision()))
    spdlog::warn("{}: checks.site_tolerances.{} = {:.2g} is below the calibrated {:.2g} of these "
                 "ops (their io rounds more than the ops it was calibrated on): clean runs may "
                 "fail there; calibrate on this device or backend (scripts/calibrate-oracle.py)",
                 s.name, site_name(t.site), t.given, t.calibrated);
  if (!result.device_info) result.device_info = device.info();  // the header has the host's
  result.reference_device = reference.device;
  result.reference_mode_reason = reference.mode_reason;
  result.reference_protection = reference.protection;
  Engine engine(s, device);
  std::unique_ptr<StepReference> ref =
      reference.make ? reference.make(s, engine.weights())
                     : std::make_unique<HostReference>(engine.weights(), s.cache,
                                                       s.model.num_q_heads, s.model.head_dim);
  const OpRoundings op_rounding = op_roundings(device.op_precision(), s.cache.dtype);
  Checker checker(s, engine.weights(), result.tolerances, std::move(ref), op_rounding);
  // The op checks read each checked chunk's K/V rows right after its step (op_inputs.h).
  std::optional<OpInputsReader> op_inputs;
  if (s.checks.op_drift) {
    op_inputs.emplace(s, engine.runner());
    result.op_rounding = op_rounding;
    result.op_bound_safety = kOpBoundSafety;
  }
  if (hooks.interrupt) checker.set_interrupt(hooks.interrupt);
  // On the host device the engine's ops and the checks share the CPU: nothing to overlap.
  result.checks_overlapped = control.overlap_checks && device.name() != "host";
  CheckPipeline pipeline(checker, result.checks_overlapped);
  // --fail-fast: asked before every step; true once a failure is found (a step was left out).
  const auto stop = [&] {
    result.stopped_at_first_failure = control.stop_at_first_failure && pipeline.found_failure();
    return result.stopped_at_first_failure;
  };

  for (int32_t epoch = 1; epoch <= s.workload.epochs; ++epoch) {
    if (epoch > 1 && stop()) break;
    std::vector<Request> requests = make_workload(s.workload, s.seed, s.model.vocab_size);
    checker.begin_epoch(epoch, static_cast<int32_t>(requests.size()));
    if (op_inputs) op_inputs->begin_epoch(static_cast<int32_t>(requests.size()));
    if (hooks.on_step) hooks.on_step(epoch, 0, 0);
    int64_t tokens = 0;
    const double waited_before = pipeline.waited_seconds();
    const auto t_epoch = std::chrono::steady_clock::now();
    const EpochCounters c = engine.run_epoch(
        requests, [&](int64_t step, const StepPlan& plan, StepOutputs&& out,
                      const Scheduler& sched) {
          CheckedStep checked = snapshot_step(step, plan, std::move(out), sched);
          if (op_inputs)
            checked.kv = op_inputs->read(plan, [&](int32_t id) { return checker.checked(id); });
          pipeline.submit(std::move(checked));
          tokens += plan.num_rows;
          if (hooks.on_step) hooks.on_step(epoch, step + 1, tokens);
        },
        stop);
    pipeline.drain();
    EpochStats st = checker.end_epoch(requests);
    static_cast<EpochCounters&>(st) = c;
    st.seconds = seconds_since(t_epoch);
    st.check_wait_seconds = pipeline.waited_seconds() - waited_before;
    spdlog::debug("epoch {}: {} steps, {} tokens, {} blocks allocated, clean {}/{}", epoch, st.steps,
                  st.tokens, st.blocks_allocated, st.clean_requests, st.requests);
    if (hooks.on_epoch) hooks.on_epoch(st);
    result.epochs.push_back(st);
  }
  result.first_failure = checker.first_failure();
  result.reference_device_bytes = checker.reference().peak_device_bytes();
  result.reference_agreement = checker.reference().agreement();
  result.verdict = result.first_failure ? Verdict::corrupt : Verdict::clean;
  result.seconds = seconds_since(t_run);
  return result;
}

}  // namespace kv
