// run_result.h — what one `kvcheck run` of one scenario found: the data behind the console table,
// the result JSON and the exit code. Plain data; its parts (verdict, epochs, first failure,
// backend report, error) each have a header of their own in result/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/device_info.h"
#include "reference/host/op_reference.h"
#include "reference/reference_choice.h"
#include "reference/step_reference.h"
#include "result/backend_report.h"
#include "result/check_sites.h"
#include "result/epoch_stats.h"
#include "result/failure.h"
#include "result/run_error.h"
#include "result/verdict.h"
#include "scenario/scenario.h"

namespace kv {

struct RunResult {
  std::string scenario;       // name
  std::string scenario_path;
  std::string device;
  // Where it ran. Always there for a run that reported; a run whose worker died (verdict error)
  // has it only on the host, which the parent process can read itself.
  std::optional<DeviceInfo> device_info;
  uint64_t seed = 0;
  std::vector<std::string> regressions;
  Expectation expected = Expectation::clean;
  Verdict verdict = Verdict::clean;
  double tolerance = 0.0;     // the largest of `tolerances` over the model's sites
  // The drift tolerance of each check site (CheckSite order); 0 for a site with no drift check.
  std::array<double, kNumCheckSites> tolerances{};
  ReferenceMode reference_mode = ReferenceMode::full;  // checks.reference, "auto" resolved
  int32_t reference_sampled_requests = 0;  // sampled mode: requests checked per epoch (at most)
  ReferenceDevice reference_device = ReferenceDevice::host;  // where the float64 reference ran
  std::string reference_mode_reason;       // why "auto" became reference_mode ("": not auto)
  std::string reference_protection;        // cuda: how its memory is kept from the code under test
  int64_t reference_device_bytes = 0;      // cuda: the most GPU memory the reference held
  std::optional<ReferenceAgreement> reference_agreement;  // --reference-device both
  // checks.op_drift on: what the op checks' bound was made of (op_checker.h): per site, the
  // precisions the ops were taken to round in; and the safety factor over the estimate.
  std::optional<std::array<OpRounding, kNumCheckSites>> op_rounding;  // per site
  double op_bound_safety = 0.0;
  bool checks_overlapped = false;  // step s was checked while the engine ran step s + 1
  // --fail-fast ended the run at its first failure before the workload was done: the verdict and
  // first failure are final, `epochs` covers the steps that ran.
  bool stopped_at_first_failure = false;
  std::vector<EpochStats> epochs;
  std::optional<Failure> first_failure;
  std::optional<BackendReport> backend;  // only with --backend
  std::optional<RunError> error;         // only with verdict error
  double seconds = 0.0;

  // ---- coverage (report/coverage.h); the run's totals are derived from `epochs` ----
  // A regression that was on and what kept the run from reaching it: a mechanism it needs that
  // the run never exercised, or a scenario setting under which it cannot show.
  struct CoverageGap {
    std::string regression;  // its name
    std::string mechanism;   // the coverage counter that stayed 0, or the field ("cache.dtype")
    std::string message;     // "needs recycled blocks, but the pool never turned over (...)"
  };
  // Set by the run from its scenario; empty where every regression on reached what it needs.
  std::vector<CoverageGap> coverage_gaps;
  // ---- end of coverage ----

  bool meets_expectation() const {
    if (verdict == Verdict::error) return false;
    return (verdict == Verdict::clean) == (expected == Expectation::clean);
  }
};

}  // namespace kv
