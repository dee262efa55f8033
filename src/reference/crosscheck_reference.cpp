#include "reference/crosscheck_reference.h"

#include <algorithm>
#include <cmath>

namespace kv {
namespace {

double norm(const double* v, int32_t n) {
  double s = 0.0;
  for (int32_t i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

double diff(const double* a, const double* b, int32_t n) {
  double s = 0.0;
  for (int32_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

// NaN stays NaN through std::max only when it comes first: keep it.
void raise(double& max, double v) {
  max = std::isnan(v) || std::isnan(max) ? NAN : std::max(max, v);
}

}  // namespace

CrosscheckReference::CrosscheckReference(const ModelSpec& m, std::unique_ptr<StepReference> primary,
                                         std::unique_ptr<StepReference> other,
                                         double row_norm_floor)
    : row_norm_floor_(row_norm_floor),
      heads_(m.num_q_heads),
      dim_(m.head_dim),
      layers_(static_cast<int32_t>(m.layers.size())),
      primary_(std::move(primary)),
      other_(std::move(other)) {}

void CrosscheckReference::begin_epoch() {
  primary_->begin_epoch();
  other_->begin_epoch();
}

void CrosscheckReference::release(int32_t request) {
  primary_->release(request);
  other_->release(request);
}

void CrosscheckReference::run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
                              const std::function<void()>& interrupt) {
  primary_->run(jobs, quant, interrupt);
  other_->run(jobs, quant, interrupt);
  const int32_t q_dim = heads_ * dim_;
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (int32_t pos = jobs[j].start; pos < jobs[j].end; ++pos)
      for (int32_t l = 0; l < layers_; ++l) {
        const double* a = primary_->attn_out(j, pos, l);
        const double* b = other_->attn_out(j, pos, l);
        // The checks' floor (checker.cpp rel_l2): a fraction of the token's RMS head norm.
        const double floor = row_norm_floor_ * norm(b, q_dim) / std::sqrt(double(heads_));
        for (int32_t h = 0; h < heads_; ++h) {
          const double ref = std::max({norm(b + h * dim_, dim_), floor, 1e-30});
          raise(agreement_.max_rel_diff, diff(a + h * dim_, b + h * dim_, dim_) / ref);
          ++agreement_.rows;
        }
      }
    if (!jobs[j].logits) continue;
    const std::vector<double> a = primary_->logits(j), b = other_->logits(j);
    const int32_t n = static_cast<int32_t>(b.size());
    raise(agreement_.max_logit_rel_diff,
          diff(a.data(), b.data(), n) / std::max(norm(b.data(), n), 1e-30));
    ++agreement_.logit_rows;
  }
}

}  // namespace kv
