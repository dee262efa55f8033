// check_pipeline.h — checks steps in order, either right away or one step behind the engine.
//
// Serial: submit() checks the step before it returns (the engine waits for every check).
// Overlapped: a checker thread checks step s while the engine runs step s + 1. submit() hands the
// step over and returns at once unless kQueuedSteps steps are already waiting to be checked; then
// it waits. The queue absorbs a burst of slow checks (a long prefill's reference) behind fast
// decode steps. At most kQueuedSteps + 1 steps are out of the engine's hands, so that many steps'
// outputs are what the pipeline holds.
//
// Either way the checker sees the same steps in the same order on one thread, so the verdict, the
// first failure and every figure but the timings are the same. An exception thrown by a check
// (a DeviceError of the GPU reference, an interrupt) is rethrown by the next submit() or drain(),
// and no later step is checked.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "check/checked_step.h"
#include "check/checker.h"

namespace kv {

class CheckPipeline {
 public:
  CheckPipeline(Checker& checker, bool overlap);
  // Stops the checker thread after the step it is checking (used when the run ends by an
  // exception; a run that ends normally calls drain() first).
  ~CheckPipeline();
  CheckPipeline(const CheckPipeline&) = delete;
  CheckPipeline& operator=(const CheckPipeline&) = delete;

  void submit(CheckedStep&& step);
  // Waits until every submitted step is checked, the steps the checker holds included.
  void drain();
  bool overlap() const { return overlap_; }
  // Wall time the caller spent waiting in submit() and drain(): what checking added to the run.
  double waited_seconds() const { return waited_seconds_; }
  // Whether a check has failed in a step checked so far (the checker's first_failure(), safe to
  // ask while the checker thread runs). A step the checker holds for a batched reference run is
  // judged later, so a failure can show some steps after the step that has it.
  bool found_failure() const { return found_failure_.load(std::memory_order_acquire); }

 private:
  void worker();
  void rethrow_failure();  // with mu_ held
  void check(CheckedStep&& step);  // on the thread that checks

  Checker& checker_;
  const bool overlap_;
  double waited_seconds_ = 0.0;
  std::atomic<bool> found_failure_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  static constexpr size_t kQueuedSteps = 4;
  std::deque<CheckedStep> queue_;  // handed over, not yet taken by the checker thread
  bool busy_ = false;                   // the checker thread is checking a step
  bool stop_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace kv
