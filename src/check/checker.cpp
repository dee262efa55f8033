#include "check/checker.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "reference/host/host_reference.h"
#include "util/parallel_for.h"
#include "reference/reference_sample.h"
#include "check/row_error.h"
#include "check/tolerances.h"
#include "util/stopwatch.h"

namespace kv {
namespace {

bool all_finite(const float* x, int32_t n) {
  for (int32_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

double l2(const double* v, int32_t n) {
  double s = 0.0;
  for (int32_t i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

double row_floor(const double* want, int32_t H, int32_t D) {
  return want ? kRowNormFloor * l2(want, H * D) / std::sqrt(static_cast<double>(H)) : 0.0;
}

// Per head of one token's output: the relative L2 error against `want` (0 without a reference
// to compare with; floor: row_floor(want)), or NaN where the output is not finite. Pure
// arithmetic: rows in parallel.
void measure_row(const float* got, const double* want, int32_t H, int32_t D, double floor,
                 double* err) {
  for (int32_t h = 0; h < H; ++h) {
    const float* g = got + h * D;
    err[h] = !all_finite(g, D) ? NAN : want ? rel_l2(g, want + h * D, D, floor) : 0.0;
  }
}

}  // namespace

Checker::Checker(const Scenario& s, const ModelWeights& w, const SiteTolerances& tolerances,
                 std::unique_ptr<StepReference> reference, const OpRoundings& op_roundings)
    : s_(s), w_(w), tol_(tolerances), ref_(std::move(reference)),
      workers_(default_worker_count()), device_measures_(ref_->measure_on_device()) {
  if (s.checks.op_drift) op_.emplace(s, w, op_roundings, kOpBoundSafety);
}

Checker::Checker(const Scenario& s, const ModelWeights& w, unsigned max_workers)
    : Checker(s, w, drift_tolerances(s, OpPrecision::host_f32),
              std::make_unique<HostReference>(w, s.cache, s.model.num_q_heads, s.model.head_dim,
                                              max_workers)) {}

void Checker::begin_epoch(int32_t epoch, int32_t num_requests) {
  epoch_ = epoch;
  ref_->begin_epoch();
  if (op_) op_->begin_epoch();
  request_bad_.assign(num_requests, 0);
  diverged_.assign(num_requests, 0);
  if (s_.checks.reference == ReferenceMode::full) {
    checked_.assign(num_requests, 1);
  } else {
    checked_.assign(num_requests, 0);
    for (int32_t id : sample_requests(s_.seed, epoch, num_requests, s_.checks.sampled_requests))
      checked_[static_cast<size_t>(id)] = 1;
  }
  stats_ = EpochStats{};
  stats_.epoch = epoch;
  stats_.requests = num_requests;
  stats_.checked_requests = static_cast<int32_t>(std::count(checked_.begin(), checked_.end(), 1));
}

void Checker::fail(const Where& w, CheckKind check, double value, double tol,
                   std::string detail) {
  request_bad_.at(w.request) = 1;
  if (!stats_.first_bad_step) stats_.first_bad_step = w.step;
  if (first_failure_) return;
  first_failure_ = Failure{.epoch = epoch_, .step = w.step, .request = w.request,
                           .position = w.position, .layer = w.layer, .head = w.head,
                           .site = w.site, .check = std::string(check_kind_name(check)),
                           .value = value, .tolerance = tol, .padded_batch = w.padded,
                           .detail = std::move(detail)};
}

void Checker::record_nonfinite(const Where& w, const char* what) {
  ++stats_.nonfinite_outputs;
  stats_.max_rel_error = NAN;  // a non-finite row has no error; the epoch's maximum says so
  stats_.site_max_rel_error[static_cast<size_t>(w.site)] = NAN;
  if (s_.checks.nonfinite) fail(w, CheckKind::nonfinite, NAN, 0.0, what);
}

void Checker::check_attention(const Where& w, int64_t job, const double* errs) {
  const int32_t D = s_.model.head_dim, H = s_.model.num_q_heads;
  for (int32_t h = 0; h < H; ++h) {
    Where wh = w;
    wh.head = h;
    if (std::isnan(errs[h])) {
      record_nonfinite(wh, "attention output is not finite");
      continue;
    }
    if (job < 0) continue;  // outside the reference sample: nothing to compare with
    const double err = errs[h];
    if (!std::isnan(stats_.max_rel_error)) stats_.max_rel_error = std::max(stats_.max_rel_error, err);
    double& site_max = stats_.site_max_rel_error[static_cast<size_t>(w.site)];
    if (!std::isnan(site_max)) site_max = std::max(site_max, err);
    const double tol = tol_[static_cast<size_t>(w.site)];
    if (s_.checks.drift && !(err <= tol)) {
      const double* want = ref_->attn_out(static_cast<size_t>(job), w.position, w.layer);
      fail(wh, CheckKind::drift, err, tol,
           fmt::format("relative L2 error {:.3g} > tolerance {:.3g} (|ref| = {:.3g}, floor {:.3g})",
                       err, tol, l2(want + h * D, D), row_floor(want, H, D)));
    }
  }
}

void Checker::check_op(const Where& w, const OpRowError* heads) {
  const int32_t H = s_.model.num_q_heads;
  const size_t site = static_cast<size_t>(w.site);
  for (int32_t h = 0; h < H; ++h) {
    const OpRowError& e = heads[h];
    if (std::isnan(e.error)) continue;  // not finite: the end-to-end check reports it as such
    const double rel = e.error / std::max(e.norm, 1e-30);
    const double ratio = e.bound > 0.0 ? e.error / e.bound : (e.error > 0.0 ? INFINITY : 0.0);
    stats_.site_max_op_error[site] = std::max(stats_.site_max_op_error[site], rel);
    stats_.site_max_op_bound_ratio[site] = std::max(stats_.site_max_op_bound_ratio[site], ratio);
    if (e.input_error >= 0.0)
      stats_.site_max_input_error[site] = std::max(stats_.site_max_input_error[site], e.input_error);
    if (!(e.error <= e.bound)) {
      Where wh = w;
      wh.head = h;
      const OpRounding& r = op_->rounding(w.site);
      fail(wh, CheckKind::op_drift, rel, e.bound / std::max(e.norm, 1e-30),
           fmt::format("the op's output is {:.3g} (relative L2) from float64 over its own inputs "
                       "({} keys), above its bound {:.3g} = {:g} x E (u_q {:.3g}, u_kv {:.3g}, "
                       "u_p {:.3g}, u_out {:.3g} x{}, u_acc {:.3g}; docs/oracle.md)",
                       rel, w.position + 1, e.bound / std::max(e.norm, 1e-30), op_->safety(),
                       r.u_q, r.u_kv, r.u_p, r.u_out, r.out_roundings, r.u_acc));
    }
  }
}

void Checker::check_token(const Where& w, int32_t token, const Request& r, int64_t job) {
  if (token < 0) {  // argmax saw a NaN logit
    record_nonfinite(w, "logits are not finite");
    return;
  }
  if (!s_.checks.tokens || job < 0) return;
  const std::vector<double> logits = ref_->logits(static_cast<size_t>(job));
  double best = -INFINITY, ms = 0.0;
  for (double x : logits) {
    best = std::max(best, x);
    ms += x * x;
  }
  const double margin = kTokenMarginFraction * std::sqrt(ms / static_cast<double>(logits.size()));
  const double gap = best - logits.at(token);
  if (!(gap <= margin)) {
    fail(w, CheckKind::token, gap, margin,
         fmt::format("sampled token {} is {:.3g} below the reference's best logit (margin {:.3g})",
                     token, gap, margin));
    return;
  }
  // Epoch agreement: follow epoch 1's tokens until the first certified near-tie.
  const auto first = first_epoch_tokens_.find(r.id);
  const size_t g = r.output.size();
  if (epoch_ == 1 || first == first_epoch_tokens_.end() || diverged_[r.id] || g >= first->second.size())
    return;
  const int32_t t1 = first->second[g];
  if (t1 == token) return;
  diverged_[r.id] = 1;
  const double gap1 = best - logits.at(t1);
  if (!(gap1 <= margin))
    fail(w, CheckKind::epoch_agreement, gap1, margin,
         fmt::format("token {} differs from epoch 1's {} and is not a near-tie", token, t1));
}

std::vector<std::vector<int64_t>> Checker::extend_references() {
  std::vector<std::vector<int64_t>> jobs_of(held_.size());
  std::vector<RefJob> jobs;
  // Each job names its own step's fp8 rows (the hints of the reference's rounding ties).
  for (size_t k = 0; k < held_.size(); ++k) {
    const CheckedStep& step = held_[k];
    const StepPlan& plan = step.plan;
    jobs_of[k].assign(plan.chunks.size(), -1);
    for (size_t j = 0; j < plan.chunks.size(); ++j) {
      const ScheduledChunk& c = plan.chunks[j];
      if (!checked(c.request_id)) continue;
      const Request& r = step.requests[j];
      RefJob job{.request = c.request_id,
                 .tokens = r.prompt,
                 .start = c.start,
                 .end = c.start + c.num_tokens,
                 .capacity = static_cast<int32_t>(r.prompt.size()) + r.max_new_tokens,
                 .first_row = plan.chunk_first_row[j],
                 .logits = c.samples,
                 .quant = &step.outputs.quant_out};
      job.tokens.insert(job.tokens.end(), r.output.begin(), r.output.end());
      jobs_of[k][j] = static_cast<int64_t>(jobs.size());
      jobs.push_back(std::move(job));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  ref_->run(jobs, held_.front().outputs.quant_out, interrupt_);
  stats_.reference_seconds += seconds_since(t0);
  return jobs_of;
}

void Checker::check_step(int64_t step, const StepPlan& plan, const StepOutputs& out,
                         const Scheduler& sched) {
  check_step(snapshot_step(step, plan, StepOutputs(out), sched));
}

void Checker::check_step(CheckedStep&& step) {
  const auto t0 = std::chrono::steady_clock::now();
  held_rows_ += step.plan.num_rows;
  held_.push_back(std::move(step));
  if (static_cast<int32_t>(held_.size()) >= std::max(1, ref_->steps_per_run()) ||
      held_rows_ >= kHeldRows)
    judge_held();
  stats_.check_seconds += seconds_since(t0);
}

void Checker::flush() {
  const auto t0 = std::chrono::steady_clock::now();
  judge_held();
  stats_.check_seconds += seconds_since(t0);
}

void Checker::judge_held() {
  if (held_.empty()) return;
  const auto t_held = std::chrono::steady_clock::now();
  const std::vector<std::vector<int64_t>> jobs = extend_references();
  if (device_measures_) {
    // The reference compares the engine's rows where its values are: the errors come back.
    const size_t q_dim = static_cast<size_t>(s_.model.num_q_heads) * s_.model.head_dim;
    std::vector<std::pair<size_t, size_t>> src;  // per job: held step, chunk
    for (size_t k = 0; k < held_.size(); ++k)
      for (size_t j = 0; j < jobs[k].size(); ++j)
        if (jobs[k][j] >= 0) src.push_back({k, j});
    measured_row0_.assign(src.size(), 0);
    int64_t rows = 0;
    for (size_t job = 0; job < src.size(); ++job) {
      measured_row0_[job] = rows;
      rows += held_[src[job].first].plan.chunks[src[job].second].num_tokens;
    }
    const auto t0 = std::chrono::steady_clock::now();
    measured_ = ref_->measure(
        [&](size_t job, int32_t layer) {
          const CheckedStep& st = held_[src.at(job).first];
          return st.outputs.attn_out[static_cast<size_t>(layer)].data() +
                 static_cast<size_t>(st.plan.chunk_first_row[src[job].second]) * q_dim;
        },
        kRowNormFloor);
    const double t = seconds_since(t0);
    stats_.reference_seconds += t;
    timing_.measure += t;
  }
  const auto t_judge = std::chrono::steady_clock::now();
  timing_.reference += seconds_between(t_held, t_judge);
  for (size_t k = 0; k < held_.size(); ++k) judge(held_[k], jobs[k]);
  timing_.judge += seconds_since(t_judge);
  ++timing_.runs;
  held_.clear();
  held_rows_ = 0;
}

void Checker::judge(const CheckedStep& cs, const std::vector<int64_t>& jobs) {
  const int64_t step = cs.step;
  const StepPlan& plan = cs.plan;
  const StepOutputs& out = cs.outputs;
  const bool padded = plan.use_graph && plan.padded_rows > plan.num_rows;
  const size_t q_dim = static_cast<size_t>(s_.model.num_q_heads) * s_.model.head_dim;
  if (op_) op_->add(cs);
  auto want = [&](size_t j, int32_t pos, size_t l) {
    return jobs[j] < 0
               ? nullptr
               : ref_->attn_out(static_cast<size_t>(jobs[j]), pos, static_cast<int32_t>(l));
  };
  // The errors of every (layer, row, head) first, rows in parallel; then the verdicts, serially.
  struct RowAt {
    size_t chunk, row;
    int32_t pos;
  };
  std::vector<RowAt> rows;
  for (size_t j = 0; j < plan.chunks.size(); ++j)
    for (int32_t i = 0; i < plan.chunks[j].num_tokens; ++i)
      rows.push_back(
          {j, static_cast<size_t>(plan.chunk_first_row[j] + i), plan.chunks[j].start + i});
  const int32_t H = s_.model.num_q_heads, D = s_.model.head_dim;
  const size_t layers = out.attn_out.size(), per_layer = rows.size() * static_cast<size_t>(H);
  std::vector<double> errs(layers * per_layer);
  std::vector<uint8_t> quant_finite(layers * rows.size(), 1);  // the fp8 op's rows
  // The op checks' errors and bounds, [layer][row][head]; bound -1: the row is not judged so.
  std::vector<OpRowError> op_errs(op_ ? layers * per_layer : 0, OpRowError{0.0, -1.0, 0.0});
  const std::vector<uint8_t> op_chunks = op_ ? op_->judged_chunks(cs) : std::vector<uint8_t>{};
  constexpr size_t kRowsPerJob = 64;
  parallel_for((rows.size() + kRowsPerJob - 1) / kRowsPerJob, workers_, [&](size_t b) {
    for (size_t k = b * kRowsPerJob; k < std::min(rows.size(), (b + 1) * kRowsPerJob); ++k)
      for (size_t l = 0; l < layers; ++l) {
        double* err = &errs[l * per_layer + k * static_cast<size_t>(H)];
        const int64_t job = jobs[rows[k].chunk];
        // The reference's row where it is on the host (null outside the sample, or where the
        // reference measured the row on its device in judge_held).
        const bool measured = device_measures_ && job >= 0;
        const double* ref_row = measured ? nullptr : want(rows[k].chunk, rows[k].pos, l);
        const double floor = row_floor(ref_row, H, D);
        if (measured) {
          const int64_t row =
              measured_row0_[static_cast<size_t>(job)] +
              (rows[k].pos - plan.chunks[rows[k].chunk].start);
          std::copy_n(&measured_[(static_cast<size_t>(row) * layers + l) * H], H, err);
        } else {
          measure_row(out.attn_out[l].data() + rows[k].row * q_dim, ref_row, H, D, floor, err);
        }
        if (op_ && job >= 0 && op_chunks[rows[k].chunk] && op_->judges_layer(cs, l))
          op_->measure(cs, rows[k].chunk, rows[k].pos, l,
                       &op_errs[l * per_layer + k * static_cast<size_t>(H)], ref_row, floor);
        if (!out.quant_out[l].empty())
          quant_finite[l * rows.size() + k] =
              all_finite(out.quant_out[l].data() + rows[k].row * q_dim, H * D) ? 1 : 0;
      }
  });
  // In the order the ops ran, so that the first failure names the op that produced it: layer by
  // layer, the attention output of every row, then the batch-wide fp8 op over every row.
  for (size_t l = 0; l < out.attn_out.size(); ++l) {
    const int32_t layer = static_cast<int32_t>(l);
    for (size_t k = 0; k < rows.size(); ++k) {
      const ScheduledChunk& c = plan.chunks[rows[k].chunk];
      const CheckSite site = mixer_site(s_.model.layers[l], c.is_decode, c.start > 0);
      const OpRowError* op_row = op_ ? &op_errs[l * per_layer + k * static_cast<size_t>(H)] : nullptr;
      if (op_row && op_row->bound >= 0.0)
        check_op({step, c.request_id, rows[k].pos, layer, -1, site, padded}, op_row);
      check_attention({step, c.request_id, rows[k].pos, layer, -1, site, padded},
                      jobs[rows[k].chunk], &errs[l * per_layer + k * static_cast<size_t>(H)]);
    }
    if (out.quant_out[l].empty()) continue;  // a linear layer: no batch-wide op
    for (size_t k = 0; k < rows.size(); ++k)
      if (!quant_finite[l * rows.size() + k])
        record_nonfinite({step, plan.chunks[rows[k].chunk].request_id, rows[k].pos, layer, -1,
                          CheckSite::fp8_output, padded},
                         "fp8 quantised attention output is not finite");
  }
  for (size_t j = 0; j < plan.chunks.size(); ++j) {
    const ScheduledChunk& c = plan.chunks[j];
    if (!c.samples) continue;
    const Request& r = cs.requests[j];
    const Where w{step, r.id, c.start + c.num_tokens - 1, -1, -1, CheckSite::sampled_token,
                  padded};
    check_token(w, out.sampled[plan.chunk_last_row(j)], r, jobs[j]);
    if (static_cast<int32_t>(r.output.size()) + 1 >= r.max_new_tokens) {
      ref_->release(r.id);
      if (op_) op_->release(r.id);
    }
  }
}

EpochStats Checker::end_epoch(const std::vector<Request>& requests) {
  flush();
  spdlog::debug("checks of epoch {}: {} reference runs; reference {:.3f} s (of which measuring "
                "on the device {:.3f} s), judging {:.3f} s",
                epoch_, timing_.runs, timing_.reference, timing_.measure, timing_.judge);
  timing_ = {};
  if (epoch_ == 1)
    for (const auto& r : requests) first_epoch_tokens_[r.id] = r.output;
  int32_t bad = 0;
  for (uint8_t b : request_bad_) bad += b;
  stats_.clean_requests = stats_.requests - bad;
  stats_.clean_request_fraction =
      stats_.requests ? static_cast<double>(stats_.clean_requests) / stats_.requests : 1.0;
  ref_->begin_epoch();
  return stats_;
}

}  // namespace kv
