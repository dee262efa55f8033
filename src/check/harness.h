// harness.h — run one scenario end to end: the engine drives the device, the reference and the
// checks judge every output, and the result says what was found.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "check/tolerances.h"
#include "device/device.h"
#include "model/model_weights.h"
#include "reference/reference_choice.h"
#include "reference/step_reference.h"
#include "result/run_result.h"
#include "scenario/scenario.h"

namespace kv {

struct HarnessHooks {
  // Called when an epoch ends (for progress logging); may be empty.
  std::function<void(const EpochStats&)> on_epoch;
  // Called with the epoch (1-based), the step (0-based) about to run and the tokens computed so
  // far in the epoch: (e, 0, 0) when epoch e starts, (e, s + 1, t) once step s has run and is
  // checked or handed to the checker thread (overlapped checks). May be
  // empty. (A worker's progress record, the progress line, --max-seconds: it may throw, and the
  // run ends there.)
  std::function<void(int32_t epoch, int64_t step, int64_t tokens)> on_step;
  // Called often within a step — before each reference position, from worker threads too, and
  // every few milliseconds of a host op (kernels/host/poll.h) — it may throw to end the run
  // mid-step (--max-seconds). May be empty.
  std::function<void()> interrupt;
};

// Where the float64 reference runs (the CLI's --reference-device, resolved). The scenario handed
// to run_scenario has checks.reference resolved to full or sampled already.
struct ReferenceSetup {
  ReferenceDevice device = ReferenceDevice::host;
  std::string mode_reason;      // why checks.reference "auto" became what it is ("" otherwise)
  std::string protection;       // how the reference's memory is kept from the code under test
  // Makes the reference once the engine exists; empty: the CPU reference.
  std::function<std::unique_ptr<StepReference>(const Scenario&, const ModelWeights&)> make;
};

// What a result says about the run before anything has run: the scenario, the device (and its
// device_info where the device is the host), the regressions and expectation, the drift tolerances
// and reference mode it is judged with.
RunResult result_header(const Scenario& scenario, const std::string& device,
                        OpPrecision precision = OpPrecision::host_f32);

// How run_scenario runs the checks and when it may stop.
struct RunControl {
  // On a device other than the host, check step s while the engine runs step s + 1
  // (check_pipeline.h; the verdict is the same either way).
  bool overlap_checks = false;
  // End the run once a check has failed (kvcheck run --fail-fast): the verdict (corrupt) and the
  // first failure are the ones the whole run would give, as every step before the failing one is
  // checked; the steps and epochs after it are not run, so the figures cover the run so far.
  bool stop_at_first_failure = false;
};

// Throws DeviceError when the device fails (the run cannot be carried out). The scenario must be
// valid (parse_scenario succeeded) with CLI overrides already applied. checks.op_drift holds only
// with the CPU reference: beside the GPU reference the op checks (op_checker.h) are off.
RunResult run_scenario(const Scenario& scenario, Device& device, const HarnessHooks& hooks = {},
                       const ReferenceSetup& reference = {}, const RunControl& control = {});

}  // namespace kv
