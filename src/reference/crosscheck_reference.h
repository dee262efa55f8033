// crosscheck_reference.h — two float64 references side by side (--reference-device both): the
// primary (the GPU's) answers the checks, the other (the CPU's) computes the same jobs, and every
// attention output row and every logit vector of theirs is compared. The largest differences go
// into the result (reference_agreement): the evidence that the GPU reference is the CPU one.
#pragma once

#include <memory>

#include "reference/step_reference.h"
#include "scenario/scenario.h"

namespace kv {

class CrosscheckReference : public StepReference {
 public:
  // row_norm_floor: the checks' floor of a row's norm, as a fraction of the token's RMS head norm
  // (check/tolerances.h kRowNormFloor), so that agreement is measured as the checks measure error.
  CrosscheckReference(const ModelSpec& m, std::unique_ptr<StepReference> primary,
                      std::unique_ptr<StepReference> other, double row_norm_floor);

  const char* device() const override { return primary_->device(); }
  void begin_epoch() override;
  void run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
           const std::function<void()>& interrupt) override;
  const double* attn_out(size_t job, int32_t pos, int32_t layer) const override {
    return primary_->attn_out(job, pos, layer);
  }
  std::vector<double> logits(size_t job) const override { return primary_->logits(job); }
  void release(int32_t request) override;
  size_t live() const override { return primary_->live(); }
  int64_t peak_device_bytes() const override { return primary_->peak_device_bytes(); }
  std::optional<ReferenceAgreement> agreement() const override { return agreement_; }

 private:
  double row_norm_floor_;
  int32_t heads_, dim_, layers_;
  std::unique_ptr<StepReference> primary_, other_;
  ReferenceAgreement agreement_;
};

}  // namespace kv
