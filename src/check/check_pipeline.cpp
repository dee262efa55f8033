#include "check/check_pipeline.h"

#include <chrono>

#include "util/stopwatch.h"

namespace kv {

CheckPipeline::CheckPipeline(Checker& checker, bool overlap)
    : checker_(checker), overlap_(overlap) {
  if (overlap_) thread_ = std::thread([this] { worker(); });
}

CheckPipeline::~CheckPipeline() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void CheckPipeline::rethrow_failure() {
  if (failure_) std::rethrow_exception(failure_);
}

void CheckPipeline::check(CheckedStep&& step) {
  checker_.check_step(std::move(step));
  if (checker_.first_failure()) found_failure_.store(true, std::memory_order_release);
}

void CheckPipeline::submit(CheckedStep&& step) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!overlap_) {
    check(std::move(step));
    waited_seconds_ += seconds_since(t0);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.size() < kQueuedSteps || failure_; });
  rethrow_failure();
  queue_.push_back(std::move(step));
  lock.unlock();
  cv_.notify_all();
  waited_seconds_ += seconds_since(t0);
}

void CheckPipeline::drain() {
  const auto t0 = std::chrono::steady_clock::now();
  if (overlap_) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return (queue_.empty() && !busy_) || failure_; });
    rethrow_failure();
  }
  checker_.flush();  // the steps the checker holds (the checker thread is idle now)
  if (checker_.first_failure()) found_failure_.store(true, std::memory_order_release);
  waited_seconds_ += seconds_since(t0);
}

void CheckPipeline::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (stop_) return;
    std::optional<CheckedStep> step = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    cv_.notify_all();  // submit() may hand over the next step now
    std::exception_ptr failure;
    try {
      check(std::move(*step));
    } catch (...) {
      failure = std::current_exception();
    }
    step.reset();  // its outputs go before the lock is taken again
    lock.lock();
    busy_ = false;
    if (failure) {
      failure_ = failure;
      cv_.notify_all();
      return;  // no later step is checked
    }
    cv_.notify_all();
  }
}

}  // namespace kv
