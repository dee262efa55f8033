#include "reference/host/host_reference.h"

#include <algorithm>

#include "util/parallel_for.h"

namespace kv {

HostReference::HostReference(const ModelWeights& w, const CacheSpec& cache, int32_t num_q_heads,
                             int32_t head_dim, unsigned max_workers)
    : w_(w),
      cache_(cache),
      q_dim_(static_cast<size_t>(num_q_heads) * static_cast<size_t>(head_dim)),
      workers_(max_workers ? max_workers : default_worker_count()) {}

void HostReference::begin_epoch() {
  refs_.clear();
  job_refs_.clear();
  job_ends_.clear();
}

void HostReference::run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
                        const std::function<void()>& interrupt) {
  // Serially first: the map's entries are created here, so the workers below only extend
  // existing sequences (std::map never moves a node) and never touch the map.
  job_refs_.assign(jobs.size(), nullptr);
  job_ends_.assign(jobs.size(), 0);
  std::vector<size_t> behind;  // jobs whose reference does not reach their last position
  std::vector<int32_t> ids;
  for (size_t j = 0; j < jobs.size(); ++j) {
    RefSequence& ref = refs_.try_emplace(jobs[j].request, w_, cache_).first->second;
    job_refs_[j] = &ref;
    job_ends_[j] = jobs[j].end;
    if (ref.length() < jobs[j].end) {
      behind.push_back(j);
      ids.push_back(jobs[j].request);
    }
  }
  // The scheduler gives a request at most one chunk per step, so no two jobs share a sequence;
  // should that ever change, the jobs run in order on this thread, as they always did.
  std::sort(ids.begin(), ids.end());
  const bool distinct = std::adjacent_find(ids.begin(), ids.end()) == ids.end();
  // Longest first, so that no worker starts a long prefill while the others run out of work: a
  // position costs about its length (attention over every earlier one).
  auto cost = [&](size_t j) {
    const int64_t from = job_refs_[j]->length(), to = jobs[j].end;
    return (to - from) * (from + to);
  };
  if (distinct)
    std::stable_sort(behind.begin(), behind.end(),
                     [&](size_t a, size_t b) { return cost(a) > cost(b); });

  parallel_for(behind.size(), distinct ? workers_ : 1u, [&](size_t k) {
    const size_t j = behind[k];
    const RefJob& job = jobs[j];
    // The engine's fp8 outputs of this chunk's rows settle the reference's rounding ties.
    const QuantHint hint = [&](int32_t pos, int32_t layer) -> const float* {
      const auto& q = (job.quant ? *job.quant : quant)[static_cast<size_t>(layer)];
      if (pos < job.start || q.empty()) return nullptr;
      return q.data() + (static_cast<size_t>(job.first_row) +
                         static_cast<size_t>(pos - job.start)) * q_dim_;
    };
    // Position by position (the same positions in the same order), so that a long prefill's
    // O(length^2) reference can be interrupted between two of them.
    for (int32_t n = job_refs_[j]->length() + 1; n <= job.end; ++n) {
      if (interrupt) interrupt();
      job_refs_[j]->extend(job.tokens, n, hint);
    }
  });
}

const double* HostReference::attn_out(size_t job, int32_t pos, int32_t layer) const {
  return job_refs_.at(job)->attn_out(pos, layer);
}

std::vector<double> HostReference::logits(size_t job) const {
  return job_refs_.at(job)->logits(job_ends_.at(job) - 1);
}

}  // namespace kv
