// run_progress.h — what a long run shows on stderr and how it is bounded.
//
// Shown: on a terminal, one progress line rewritten in place (epoch, step, tokens, elapsed, ETA);
// otherwise (a CI log) one line per finished epoch with the ETA of the rest. Nothing with -q. The
// ETA comes from the tokens computed so far against the estimate's tokens per epoch
// (check/run_cost.h) during epoch 1, and from the measured epochs after it: every epoch runs the
// same workload.
//
// Bounded: past the --max-seconds deadline the next check throws TimeLimitReached, saying how far
// the scenario got; the run ends as "cannot run" (exit 3) and writes no result for it. Checked
// after each step and within one: before each reference position and every few milliseconds of a
// host op (kernels/host/poll.h), so a run ends within milliseconds of the deadline. A backend call
// does not poll: its worker is stopped shortly after the deadline (plugin/worker.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "check/run_cost.h"
#include "result/run_result.h"

namespace kv::cli {

using Clock = std::chrono::steady_clock;

struct TimeLimitReached : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Deadline {
  std::optional<Clock::time_point> at;  // none: no limit
  int32_t seconds = 0;                  // the option's value, for messages
  bool per_scenario = false;            // --timeout-per-scenario's; else --max-seconds's
  bool passed() const { return at && Clock::now() >= *at; }
  const char* option() const { return per_scenario ? "--timeout-per-scenario" : "--max-seconds"; }
  // What becomes of the scenario stopped at it, for messages.
  const char* outcome() const {
    return per_scenario ? "; verdict error (timeout)" : "; no result file is written for it";
  }
};

class RunProgress {
 public:
  // `terminal`: stderr is a terminal (the line is rewritten); `show`: print anything at all.
  RunProgress(std::string scenario, const RunCost& cost, Deadline deadline, bool terminal,
              bool show);
  ~RunProgress();  // clears the progress line
  RunProgress(const RunProgress&) = delete;
  RunProgress& operator=(const RunProgress&) = delete;

  // After each step (HarnessHooks::on_step). Throws TimeLimitReached past the deadline.
  void on_step(int32_t epoch, int64_t step, int64_t tokens);
  // Within a step, from any thread (HarnessHooks::interrupt): throws past the deadline.
  void check_deadline() const;
  void on_epoch(const EpochStats& e);

  // "1 of 3 epochs and 120 steps (5,000 tokens) of epoch 2": how far the scenario got.
  std::string done_so_far() const;

 private:
  double eta_seconds() const;  // negative: not known yet
  void draw_line();
  void clear_line();

  std::string scenario_;
  RunCost cost_;
  Deadline deadline_;
  bool terminal_, show_;
  Clock::time_point start_ = Clock::now(), last_draw_{};
  int32_t epoch_ = 0, epochs_done_ = 0;
  int64_t step_ = 0, tokens_ = 0, steps_done_ = 0, tokens_done_ = 0;
  bool line_shown_ = false;
};

}  // namespace kv::cli
