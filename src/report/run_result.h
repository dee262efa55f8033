// run_result.h — what one `kvcheck run` of one scenario found: the data behind the console table,
// the result JSON and the exit code. Plain data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/check_sites.h"
#include "device/device_info.h"
#include "engine/epoch_counters.h"
#include "reference/step_reference.h"
#include "scenario/scenario.h"

namespace kv {

// error: the run itself failed inside a backend (a crash, an exit, an error status or a hang):
// never what a scenario expects.
enum class Verdict { clean, corrupt, error };

// Why a run with a backend plugin ended in an error verdict, and where.
struct RunError {
  std::string kind;      // crash | exit | status | hang
  std::string op;        // the backend op in progress; empty when none was
  int32_t epoch = 0;     // 1-based; 0 while setting up (weights, warm-up, graph capture)
  int64_t step = 0;      // the step running within the epoch, 0-based
  int32_t layer = -1;    // the model layer of the latest backend call; -1: none
  std::string layer_kind;  // its kind; empty for none
  std::string signal;    // crash: SIGSEGV, SIGABRT, ...
  int32_t exit_code = 0;  // exit: the worker's exit status
  std::string message;   // one human line: what happened where (the console's verdict line)
};

// The first output that failed a check, with where it came from.
struct Failure {
  int32_t epoch = 0;     // 1-based
  int64_t step = 0;      // step index within the epoch, 0-based
  int32_t request = 0;   // request id (index in the workload)
  int32_t position = 0;  // token position within the request
  int32_t layer = -1;    // -1 when not layer-specific (lm_head / token checks)
  int32_t head = -1;
  CheckSite site = CheckSite::decode;  // the kind of row; its ops are site_info(site).ops
  std::string check;     // nonfinite, drift, token, epoch_agreement
  double value = 0.0;    // the error (or NaN) that failed
  double tolerance = 0.0;
  bool padded_batch = false;  // the step ran as a padded graph replay
  std::string detail;    // one human line
};

inline std::array<double, kNumCheckSites> no_site_errors() {
  std::array<double, kNumCheckSites> a;
  a.fill(-1.0);
  return a;
}

// One epoch: the engine's counters and what the checks found.
struct EpochStats : EpochCounters {
  int32_t epoch = 0;  // 1-based
  int32_t requests = 0;
  int32_t checked_requests = 0;  // compared with the reference: all in full mode, the sample's in
                                 // sampled mode
  int32_t clean_requests = 0;
  double clean_request_fraction = 0.0;
  int64_t nonfinite_outputs = 0;
  double max_rel_error = 0.0;               // over all checked rows; NaN if any row was NaN
  // The same per check site (CheckSite order): -1 where the epoch checked no row of the site.
  std::array<double, kNumCheckSites> site_max_rel_error = no_site_errors();
  std::optional<int64_t> first_bad_step;    // within the epoch
  double seconds = 0.0;                     // wall time of the epoch's steps
  double check_seconds = 0.0;               // spent in the reference and checks
  double reference_seconds = 0.0;           // of check_seconds: computing the reference
  // Of `seconds`: how long the engine waited for the checks. check_seconds when the checks do
  // not overlap the engine; with overlapped checks, the part they did not hide.
  double check_wait_seconds = 0.0;
};

// What a backend plugin ran of the scenario (`kvcheck run --backend`).
struct BackendOpReport {
  std::string op;         // an ABI op: write_kv, paged_decode, ...
  std::string placement;  // "backend", "builtin" (not implemented, pinned or fallen back), "unused"
  int64_t backend_calls = 0;
  int64_t builtin_calls = 0;
};

// The calls of one layer kind (attention, mla, linear) of the model, over all ops.
struct BackendKindReport {
  std::string layer_kind;
  int64_t backend_calls = 0;
  int64_t total_calls = 0;
};

struct BackendReport {
  std::string path;  // absolute
  std::string name;
  std::string version;
  std::string sha256;  // of the library file
  int32_t abi_version = 0;
  std::vector<BackendOpReport> ops;
  std::vector<BackendKindReport> layer_kinds;  // the kinds the model has: attention, mla, linear
  std::vector<std::string> notes;  // ops that run built-in and why; what the engine adapted
  int64_t backend_calls() const {
    int64_t n = 0;
    for (const auto& o : ops) n += o.backend_calls;
    return n;
  }
  int64_t total_calls() const {
    int64_t n = 0;
    for (const auto& o : ops) n += o.backend_calls + o.builtin_calls;
    return n;
  }
};

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
  std::string reference_device = "host";   // where the float64 reference ran: host | cuda
  std::string reference_mode_reason;       // why "auto" became reference_mode ("": not auto)
  std::string reference_protection;        // cuda: how its memory is kept from the code under test
  int64_t reference_device_bytes = 0;      // cuda: the most GPU memory the reference held
  std::optional<ReferenceAgreement> reference_agreement;  // --reference-device both
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
