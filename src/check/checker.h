// checker.h — judges every step's outputs against the float64 reference.
//
// Checks, per real row (never a padded one): non-finite values in each layer's attention output
// and fp8 output; drift of each (token, head) attention output row; the sampled token against the
// reference logits (accepted within a near-tie margin); and, from the second epoch on, agreement
// of the generated tokens with the first epoch's (a divergence is accepted only at a certified
// near-tie). Any failure makes the request unclean for the epoch; the first one is kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "engine/model_runner.h"
#include "engine/model_weights.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"
#include "reference/ref_sequence.h"
#include "report/run_result.h"
#include "scenario/scenario.h"

namespace kv {

class Checker {
 public:
  Checker(const Scenario& s, const ModelWeights& w);

  void begin_epoch(int32_t epoch, int32_t num_requests);
  void check_step(int32_t step, const StepPlan& plan, const StepOutputs& out, const Scheduler& sched);
  // Figures of the epoch; the requests hold their final outputs.
  EpochStats end_epoch(const std::vector<Request>& requests);

  const std::optional<Failure>& first_failure() const { return first_failure_; }
  double tolerance() const { return tol_; }

 private:
  struct Where {
    int32_t step, request, position, layer, head;
    const char* op;
    bool padded;
  };
  void fail(const Where& w, const char* check, double value, double tol, std::string detail);
  void record_nonfinite(const Where& w, const char* what);
  void check_attention(const Where& w, const float* got, const double* want);
  void check_quantised(const Where& w, const float* got);
  void check_token(const Where& w, int32_t token, const Request& r, RefSequence& ref);

  const Scenario& s_;
  const ModelWeights& w_;
  double tol_;
  int32_t epoch_ = 0;
  std::map<int32_t, RefSequence> refs_;       // per request, this epoch
  std::vector<uint8_t> request_bad_;
  std::vector<uint8_t> diverged_;             // generated tokens left epoch 1's path at a tie
  std::map<int32_t, std::vector<int32_t>> first_epoch_tokens_;
  EpochStats stats_;
  std::optional<Failure> first_failure_;
};

}  // namespace kv
