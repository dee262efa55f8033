// memory_fit_test.cpp — the fit check of a run's estimate against the machine, the device and
// --max-memory: which limit refuses, what the message names, when "--device host" is a hint.
#include <gtest/gtest.h>

#include "cli/memory_fit.h"

namespace kv::cli {
namespace {

constexpr int64_t MiB = 1 << 20;

RunCost cost_of(int64_t device, int64_t host) {
  RunCost c;
  c.memory = {{"KV cache", device, true, "cache.num_blocks"},
              {"reference", host, false, "engine.max_running_requests"}};
  return c;
}

TEST(MemoryFit, ParsesSizes) {
  EXPECT_EQ(parse_memory_size("4096"), 4096);
  EXPECT_EQ(parse_memory_size("512K"), 512 * 1024);
  EXPECT_EQ(parse_memory_size("64M"), 64 * MiB);
  EXPECT_EQ(parse_memory_size("1.5G"), 1536 * MiB);
  EXPECT_EQ(parse_memory_size("8GiB"), 8192 * MiB);
  EXPECT_EQ(parse_memory_size("8GB"), 8192 * MiB);
  EXPECT_EQ(parse_memory_size("2t"), int64_t{2} << 40);
  for (const char* bad : {"", "G", "lots", "0", "-1G", "8X", "8 G", "nan", "inf", "1e30"})
    EXPECT_FALSE(parse_memory_size(bad).has_value()) << bad;
}

TEST(MemoryFit, FitsWhenEveryLimitHolds) {
  EXPECT_FALSE(memory_refusal("s", cost_of(10 * MiB, 10 * MiB),
                              {.host_available = 100 * MiB, .device_free = 50 * MiB,
                               .budget = 30 * MiB, .device_is_host = false}));
  EXPECT_FALSE(memory_refusal("s", cost_of(10 * MiB, 10 * MiB), {}));  // nothing known
}

TEST(MemoryFit, TheBudgetCountsHostAndDevice) {
  const auto why = memory_refusal("s", cost_of(10 * MiB, 10 * MiB), {.budget = 15 * MiB});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("above --max-memory 15.0 MiB"), std::string::npos) << *why;
}

TEST(MemoryFit, OnTheHostDeviceTheCacheIsHostMemory) {
  const auto why = memory_refusal("s", cost_of(80 * MiB, 10 * MiB),
                                  {.host_available = 50 * MiB, .device_is_host = true});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("90.0 MiB of host memory"), std::string::npos) << *why;
  EXPECT_NE(why->find("lower cache.num_blocks (the KV cache: 80.0 MiB)"), std::string::npos)
      << *why;
  EXPECT_EQ(why->find("reference"), std::string::npos) << "the cache alone covers it: " << *why;
}

TEST(MemoryFit, OnAGpuTheHostOnlyHoldsTheHostPart) {
  EXPECT_FALSE(memory_refusal("s", cost_of(80 * MiB, 10 * MiB),
                              {.host_available = 50 * MiB, .device_free = 100 * MiB,
                               .device_is_host = false}));
}

TEST(MemoryFit, TheDeviceHintsAtTheHostOnlyWhenTheHostHasTheMemory) {
  const RunCost c = cost_of(80 * MiB, 10 * MiB);
  const auto roomy = memory_refusal(
      "s", c, {.host_available = 1000 * MiB, .device_free = 40 * MiB, .device_is_host = false});
  ASSERT_TRUE(roomy);
  EXPECT_NE(roomy->find("the device has 40.0 MiB free: lower cache.num_blocks"),
            std::string::npos)
      << *roomy;
  EXPECT_NE(roomy->find("--device host"), std::string::npos) << *roomy;
  const auto tight = memory_refusal(
      "s", c, {.host_available = 60 * MiB, .device_free = 40 * MiB, .device_is_host = false});
  ASSERT_TRUE(tight);
  EXPECT_EQ(tight->find("--device host"), std::string::npos) << *tight;
}

TEST(MemoryFit, ThisMachineReportsItsMemory) {
  const auto avail = host_available_bytes();
  ASSERT_TRUE(avail);  // Linux: /proc/meminfo
  EXPECT_GT(*avail, 0);
}

}  // namespace
}  // namespace kv::cli
