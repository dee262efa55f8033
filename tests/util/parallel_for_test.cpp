// parallel_for_test.cpp — the checker's thread fan-out: every job exactly once whatever the
// worker count, serial below two jobs, and a failing job's exception reaches the caller.
#include "util/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kv {
namespace {

TEST(ParallelFor, RunsEveryJobExactlyOnce) {
  for (unsigned workers : {1u, 2u, 3u, 16u}) {
    for (std::size_t n : {0u, 1u, 2u, 7u, 100u}) {
      std::vector<std::atomic<int>> runs(n);
      parallel_for(n, workers, [&](std::size_t i) { ++runs[i]; });
      for (std::size_t i = 0; i < n; ++i)
        EXPECT_EQ(runs[i].load(), 1) << "job " << i << " of " << n << ", " << workers << " workers";
    }
  }
}

TEST(ParallelFor, OneJobOrOneWorkerStaysOnTheCallingThread) {
  const auto caller = std::this_thread::get_id();
  parallel_for(1, 8, [&](std::size_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
  parallel_for(5, 1, [&](std::size_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
  parallel_for(5, 0, [&](std::size_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
}

TEST(ParallelFor, UsesSeveralThreadsWhenAllowed) {
  std::atomic<int> inside{0}, most{0};
  parallel_for(8, 4, [&](std::size_t) {
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --inside;
  });
  EXPECT_GT(most.load(), 1) << "jobs should overlap with 4 workers";
}

TEST(ParallelFor, RethrowsTheFirstFailingJobsExceptionAfterAllFinish) {
  std::atomic<int> done{0};
  try {
    parallel_for(50, 4, [&](std::size_t i) {
      if (i == 7 || i == 30) throw std::runtime_error("job " + std::to_string(i));
      ++done;
    });
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "job 7");
  }
  EXPECT_EQ(done.load(), 48) << "the other jobs still ran";
}

TEST(ParallelFor, TheWorkerCountLimitCapsTheDefault) {
  // `run -j N` sets it before it forks N workers: each then uses its share of the cores.
  const unsigned cores = default_worker_count();
  worker_count_limit() = 1;
  EXPECT_EQ(default_worker_count(), 1u);
  worker_count_limit() = cores + 5;  // never above the cores
  EXPECT_EQ(default_worker_count(), cores);
  worker_count_limit() = 0;
  EXPECT_EQ(default_worker_count(), cores);
}

}  // namespace
}  // namespace kv
