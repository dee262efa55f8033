// checker.h — judges every step's outputs against the float64 reference.
//
// Checks, per real row (never a padded one): non-finite values in each layer's attention output
// and fp8 output; drift of each (token, head) attention output row; the sampled token against the
// reference logits (accepted within a near-tie margin); and, from the second epoch on, agreement
// of the generated tokens with the first epoch's (a divergence is accepted only at a certified
// near-tie). Any failure makes the request unclean for the epoch; the first one is kept.
//
// With checks.reference "sampled" only the epoch's reference sample (reference_sample.h) gets
// all of that. The other requests get the checks that need no reference — non-finite attention
// and fp8 outputs, NaN logits — and no RefSequence is ever built for them: the reference's cost,
// O(length^2) per request and layer, is the sample's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "check/checked_step.h"
#include "check/op_checker.h"
#include "check/tolerances.h"
#include "engine/model_runner.h"
#include "model/model_weights.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"
#include "reference/step_reference.h"
#include "result/epoch_stats.h"
#include "result/failure.h"
#include "scenario/scenario.h"

namespace kv {

class Checker {
 public:
  // reference: the float64 reference the checked requests are compared with (step_reference.h).
  // tolerances: the drift tolerance of each check site (tolerances.h).
  // op_roundings: what the ops under test round in, for the op checks' bound (op_checker.h; only
  // read with checks.op_drift on).
  Checker(const Scenario& s, const ModelWeights& w, const SiteTolerances& tolerances,
          std::unique_ptr<StepReference> reference, const OpRoundings& op_roundings = {});
  // The CPU reference on `max_workers` threads (0: one per hardware thread; the results do not
  // depend on it), with the tolerances of kvcheck's own float32 ops.
  explicit Checker(const Scenario& s, const ModelWeights& w, unsigned max_workers = 0);

  // Request ids of the epoch are 0 .. num_requests-1; the reference sample is drawn here.
  void begin_epoch(int32_t epoch, int32_t num_requests);
  // Judges the step — or, where the reference takes several steps per run (steps_per_run), holds
  // it until that many steps or kHeldRows rows are held, and judges them together, in order.
  // The verdicts, first failure and figures are the same either way.
  void check_step(CheckedStep&& step);
  // The same for a step the caller still holds (the outputs and requests are copied).
  void check_step(int64_t step, const StepPlan& plan, const StepOutputs& out,
                  const Scheduler& sched);
  // Judges every held step now (end_epoch does it too).
  void flush();
  // Figures of the epoch; the requests hold their final outputs.
  EpochStats end_epoch(const std::vector<Request>& requests);

  const std::optional<Failure>& first_failure() const { return first_failure_; }
  // Called before each reference position is computed, from any worker thread; it may throw to
  // end the run (--max-seconds), and check_step then rethrows it.
  void set_interrupt(std::function<void()> f) { interrupt_ = std::move(f); }
  const SiteTolerances& tolerances() const { return tol_; }
  double tolerance(CheckSite site) const { return tol_[static_cast<size_t>(site)]; }
  // Whether `request` is checked against the reference this epoch (all of them in full mode).
  bool checked(int32_t request) const { return checked_.at(static_cast<size_t>(request)) != 0; }
  // Requests whose reference history is held now: one per checked request still running, never
  // one for a request outside the sample.
  size_t live_references() const { return ref_->live(); }
  const StepReference& reference() const { return *ref_; }
  // The op checks, when checks.op_drift is on; null otherwise.
  const OpChecker* op_checker() const { return op_ ? &*op_ : nullptr; }

 private:
  struct Where {
    int64_t step;
    int32_t request, position, layer, head;
    CheckSite site;
    bool padded;
  };
  // Brings the reference of every held step's checked chunks up to their last positions; per
  // held step and chunk, its job in the reference, or -1 for a request outside the sample.
  std::vector<std::vector<int64_t>> extend_references();
  // The held steps: the reference brought up to all of them in one run, then each judged.
  void judge_held();
  void judge(const CheckedStep& step, const std::vector<int64_t>& jobs);
  void fail(const Where& w, CheckKind check, double value, double tol, std::string detail);
  void record_nonfinite(const Where& w, const char* what);
  // `job` is -1 for a request outside the sample: then only non-finite values and NaN logits
  // are checked. errs: per head, the row's error (NaN: not finite; measure_row).
  void check_attention(const Where& w, int64_t job, const double* errs);
  // The op check of one row: per head, its error and bound (op_checker.h).
  void check_op(const Where& w, const OpRowError* heads);
  void check_token(const Where& w, int32_t token, const Request& r, int64_t job);

  const Scenario& s_;
  const ModelWeights& w_;
  SiteTolerances tol_;
  std::unique_ptr<StepReference> ref_;
  std::optional<OpChecker> op_;
  unsigned workers_;  // threads measuring a step's rows
  // The reference measures the checked rows where its values are (StepReference::measure): the
  // errors of the held steps' jobs, [row][layer][head], and each job's first row in them.
  bool device_measures_ = false;
  std::vector<double> measured_;
  std::vector<int64_t> measured_row0_;
  int32_t epoch_ = 0;
  std::vector<uint8_t> checked_;              // per request: in this epoch's reference sample
  std::vector<uint8_t> request_bad_;
  std::vector<uint8_t> diverged_;             // generated tokens left epoch 1's path at a tie
  std::map<int32_t, std::vector<int32_t>> first_epoch_tokens_;
  EpochStats stats_;
  std::optional<Failure> first_failure_;
  std::function<void()> interrupt_;
  // Steps waiting to be judged together (a reference with steps_per_run() > 1), and their rows.
  static constexpr int64_t kHeldRows = 1024;
  // Where the epoch's check time went (logged at -v when it ends).
  struct Timing {
    int64_t runs = 0;
    double reference = 0.0, measure = 0.0, judge = 0.0;
  } timing_;
  std::vector<CheckedStep> held_;
  int64_t held_rows_ = 0;
};

}  // namespace kv
