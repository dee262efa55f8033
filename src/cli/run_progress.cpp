// run_progress.cpp — RunProgress: the progress line or per-epoch lines, the ETA, the deadline.
#include "cli/run_progress.h"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/stopwatch.h"
#include "report/format.h"

namespace kv::cli {
namespace {

// "45 s", "12 min 5 s", "3 h 20 min": an ETA needs no milliseconds.
std::string eta_text(double s) {
  const auto whole = static_cast<int64_t>(s + 0.5);
  if (s < 10) return fmt::format("{:.1f} s", s);
  if (whole < 60) return fmt::format("{} s", whole);
  if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
  return fmt::format("{} h {} min", whole / 3600, whole % 3600 / 60);
}

}  // namespace

RunProgress::RunProgress(std::string scenario, const RunCost& cost, Deadline deadline,
                         bool terminal, bool show)
    : scenario_(std::move(scenario)), cost_(cost), deadline_(deadline), terminal_(terminal),
      show_(show) {}

RunProgress::~RunProgress() { clear_line(); }  // also when a TimeLimitReached passes by

void RunProgress::on_step(int32_t epoch, int64_t step, int64_t tokens) {
  epoch_ = epoch;
  step_ = step;
  tokens_ = tokens;
  check_deadline();
  if (!show_ || !terminal_) return;
  const Clock::time_point now = Clock::now();
  if (seconds_between(last_draw_, now) < 0.25) return;  // a few redraws a second at most
  last_draw_ = now;
  draw_line();
}

void RunProgress::check_deadline() const {
  if (!deadline_.passed()) return;
  // Between steps or, from the reference's workers, within one: epoch_ and step_ were written
  // before the step began and are only read here.
  throw TimeLimitReached(fmt::format(
      "{} {} reached while running {}: {} done{}", deadline_.option(), deadline_.seconds, scenario_,
      done_so_far(), deadline_.outcome()));
}

void RunProgress::on_epoch(const EpochStats& e) {
  ++epochs_done_;
  steps_done_ += e.steps;
  tokens_done_ += e.tokens;
  step_ = tokens_ = 0;
  const double eta = eta_seconds();
  const std::string line = fmt::format(
      "{}: epoch {}/{}: {}/{} requests clean, {} non-finite, max rel err {}, {} steps, {}{}",
      scenario_, e.epoch, cost_.epochs, e.clean_requests, e.requests, e.nonfinite_outputs,
      format_error_value(e.max_rel_error), e.steps, format_duration(e.seconds),
      epochs_done_ < cost_.epochs && eta >= 0 ? ", ETA " + eta_text(eta) : "");
  // On a terminal the progress line says it; in a log one line per epoch does (-v shows both).
  if (show_ && !terminal_) {
    spdlog::info("{}", line);
  } else {
    clear_line();
    spdlog::debug("{}", line);
  }
}

std::string RunProgress::done_so_far() const {
  return fmt::format("{} of {} epoch(s) and {} step(s) ({} tokens) of epoch {}", epochs_done_,
                     cost_.epochs, step_, tokens_, epochs_done_ + 1);
}

double RunProgress::eta_seconds() const {
  const double elapsed = seconds_between(start_, Clock::now());
  // After epoch 1 every epoch's tokens are known: the same workload.
  const double per_epoch = epochs_done_ > 0 ? static_cast<double>(tokens_done_) / epochs_done_
                                            : static_cast<double>(cost_.tokens_per_epoch);
  const double total = per_epoch * cost_.epochs;
  const double done = static_cast<double>(tokens_done_ + tokens_);
  if (done <= 0 || elapsed <= 0 || total <= done) return done > 0 ? 0.0 : -1.0;
  return elapsed / done * (total - done);
}

void RunProgress::draw_line() {
  const double eta = eta_seconds();
  const std::string line = fmt::format(
      "{}: epoch {}/{}, step {}, {} tokens, {}{}", scenario_, epoch_, cost_.epochs, step_,
      format_count(static_cast<double>(tokens_)),
      format_duration(seconds_between(start_, Clock::now())),
      eta >= 0 ? ", ETA " + eta_text(eta) : "");
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  line_shown_ = true;
}

void RunProgress::clear_line() {
  if (!line_shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  line_shown_ = false;
}

}  // namespace kv::cli
