// host_reference.h — the float64 reference on the CPU: one RefSequence per checked request,
// the requests of a step extended in parallel on worker threads (results independent of their
// number), position by position so that --max-seconds can stop a long prefill between two.
#pragma once

#include <map>
#include <memory>

#include "model/model_weights.h"
#include "reference/host/ref_sequence.h"
#include "reference/step_reference.h"

namespace kv {

class HostReference : public StepReference {
 public:
  // max_workers: threads extending one step's requests at the same time (0: one per hardware
  // thread).
  HostReference(const ModelWeights& w, const CacheSpec& cache, int32_t num_q_heads,
                int32_t head_dim, unsigned max_workers = 0);

  const char* device() const override { return "host"; }
  void begin_epoch() override;
  void run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
           const std::function<void()>& interrupt) override;
  const double* attn_out(size_t job, int32_t pos, int32_t layer) const override;
  std::vector<double> logits(size_t job) const override;
  void release(int32_t request) override { refs_.erase(request); }
  size_t live() const override { return refs_.size(); }

 private:
  const ModelWeights& w_;
  CacheSpec cache_;
  size_t q_dim_;
  unsigned workers_;
  std::map<int32_t, RefSequence> refs_;  // per request with history, this epoch
  std::vector<RefSequence*> job_refs_;   // of the last run(), per job
  std::vector<int32_t> job_ends_;
};

}  // namespace kv
