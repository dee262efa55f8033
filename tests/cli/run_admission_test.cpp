// run_admission_test.cpp — `run -j N`'s decisions without processes or GPUs: at most N at once;
// shared memory limits summed over the scenarios running (the per-process ones not); on GPUs, the
// least busy one that fits, each worker's CUDA context counted; whatever nothing else runs beside
// starts (the worker checks its own device); a scenario too large for any GPU is refused up front.
#include "cli/run_admission.h"

#include <gtest/gtest.h>

namespace kv::cli {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

// A run of `host` bytes on the host and `device` bytes on the device.
RunCost cost_of(int64_t host, int64_t device) {
  RunCost c;
  c.memory.push_back({.what = "program", .bytes = host, .on_device = false, .fields = ""});
  c.memory.push_back(
      {.what = "KV cache", .bytes = device, .on_device = true, .fields = "cache.num_blocks"});
  return c;
}

MemoryLimits host_limits(int64_t available) {
  MemoryLimits l;
  l.host_available = available;
  l.device_is_host = true;
  return l;
}

TEST(RunAdmission, AtMostJobsAtOnce) {
  RunAdmission a(2, host_limits(1000 * MiB), {});
  EXPECT_EQ(a.place("s", cost_of(MiB, MiB)), -1);
  a.started(0, cost_of(MiB, MiB), -1);
  EXPECT_EQ(a.place("s", cost_of(MiB, MiB)), -1);
  a.started(1, cost_of(MiB, MiB), -1);
  EXPECT_FALSE(a.place("s", cost_of(MiB, MiB)).has_value());
  a.finished(0);
  EXPECT_EQ(a.running(), 1u);
  EXPECT_EQ(a.place("s", cost_of(MiB, MiB)), -1);
}

TEST(RunAdmission, SharedHostMemoryIsSummedOverTheScenariosRunning) {
  RunAdmission a(8, host_limits(100 * MiB), {});
  const RunCost forty = cost_of(20 * MiB, 20 * MiB);  // on the host device: 40 MiB of host memory
  a.started(0, forty, -1);
  EXPECT_EQ(a.place("s", forty), -1);  // 80 of 100
  a.started(1, forty, -1);
  EXPECT_FALSE(a.place("s", forty).has_value());  // 120 of 100: waits
  a.finished(1);
  EXPECT_EQ(a.place("s", forty), -1);
}

TEST(RunAdmission, TheBudgetIsSharedTooButAProcessLimitCountsEachAlone) {
  MemoryLimits l = host_limits(1000 * MiB);
  l.budget = 50 * MiB;
  l.address_space = MemoryCap{.name = "`ulimit -v` (RLIMIT_AS)", .limit = 45 * MiB, .used = 0};
  RunAdmission a(8, l, {});
  const RunCost thirty = cost_of(15 * MiB, 15 * MiB);
  EXPECT_FALSE(a.refusal_alone("s", thirty).has_value());
  a.started(0, thirty, -1);
  // 60 MiB together: over --max-memory 50M, although each process stays under its 45 MiB.
  EXPECT_FALSE(a.place("s", thirty).has_value());
  RunAdmission b(8, l, {});
  EXPECT_TRUE(b.refusal_alone("s", cost_of(25 * MiB, 25 * MiB)).has_value());
}

TEST(RunAdmission, GpusTakeTheLeastBusyThatFits) {
  MemoryLimits l = host_limits(1000 * MiB);
  l.device_is_host = false;
  RunAdmission a(8, l, {4096 * MiB, 4096 * MiB});
  const RunCost big = cost_of(MiB, 2048 * MiB);
  EXPECT_EQ(a.place("s", big), 0);
  a.started(0, big, 0);
  EXPECT_EQ(a.place("s", big), 1);  // GPU 0 runs one: GPU 1 is less busy
  a.started(1, big, 1);
  // Each GPU has 4096 MiB: 2048 + 512 (context) used, 2048 + 512 more does not fit on either.
  EXPECT_FALSE(a.place("s", big).has_value());
  const RunCost small = cost_of(MiB, 512 * MiB);
  EXPECT_EQ(a.place("s", small), 0);  // fits beside one: ties go to the lowest number
  a.started(2, small, 0);
  EXPECT_EQ(a.place("s", small), 1);
  a.finished(0);
  a.finished(2);
  EXPECT_EQ(a.running_on(0), 0u);
  EXPECT_EQ(a.place("s", big), 0);
}

TEST(RunAdmission, AloneOnAGpuAScenarioStartsAndOneTooLargeForAnyIsRefused) {
  MemoryLimits l = host_limits(1000 * MiB);
  l.device_is_host = false;
  RunAdmission a(2, l, {1024 * MiB, 3072 * MiB});
  // 2.5 GiB does not fit GPU 0's figure, but GPU 1's.
  EXPECT_FALSE(a.refusal_alone("s", cost_of(MiB, 2560 * MiB)).has_value());
  const auto too_big = a.refusal_alone("big", cost_of(MiB, 4096 * MiB));
  ASSERT_TRUE(too_big.has_value());
  EXPECT_NE(too_big->find("big needs about 4.00 GiB of device memory"), std::string::npos)
      << *too_big;
  EXPECT_NE(too_big->find("the GPU with the most has 3.00 GiB free"), std::string::npos)
      << *too_big;
}

TEST(RunAdmission, OnTheHostThereIsNoGpu) {
  RunAdmission a(4, host_limits(1000 * MiB), {});
  EXPECT_EQ(a.place("s", cost_of(MiB, MiB)), -1);
  EXPECT_EQ(a.running_on(-1), 0u);
}

}  // namespace
}  // namespace kv::cli
