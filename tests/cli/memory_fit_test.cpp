// memory_fit_test.cpp — the fit check of a run's estimate against the machine, this process's
// limits (cgroup, `ulimit -v`, `ulimit -d`), the device and --max-memory: which limit refuses,
// what the message names, when "--device host" is a hint; and kvcheck run under a real
// `ulimit -v` / `ulimit -d` at 1.1x and 0.5x a scenario's estimate.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "cli/host_memory.h"
#include "cli/load_scenarios.h"
#include "cli/memory_fit.h"
#include "cli_runner.h"

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
  EXPECT_EQ(parse_memory_size("8GiB"), 8192 * MiB);
  EXPECT_EQ(parse_memory_size("8GB"), 8192 * MiB);
  EXPECT_EQ(parse_memory_size("2t"), int64_t{2} << 40);
  for (const char* bad : {"", "G", "lots", "0", "-1", "-1G", "8X", "1.5G", "nan", "inf", "1e30",
                          "8E"})
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
  const MemoryLimits l = host_memory_limits();
  ASSERT_TRUE(l.host_available);  // Linux: /proc/meminfo
  EXPECT_GT(*l.host_available, 0);
  EXPECT_GE(l.thread_stack, 64 * 1024);  // pthread's default stack, read from glibc
  EXPECT_EQ(l.thread_arena, 64 * MiB);
  EXPECT_GE(l.checker_threads, 1);
}

MemoryCap ulimit_v(int64_t limit, int64_t used) {
  return {.name = "`ulimit -v` (RLIMIT_AS)", .limit = limit, .used = used};
}

TEST(MemoryFit, UlimitVLeavesLessThanTheLimit) {
  const RunCost c = cost_of(80 * MiB, 10 * MiB);
  // What kvcheck already maps counts: 100 MiB less 40 in use cannot hold 90.
  const auto why = memory_refusal("s", c, {.address_space = ulimit_v(100 * MiB, 40 * MiB)});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("s needs about 90.0 MiB of address space (estimate; `kvcheck validate "
                      "FILE` itemises it) but `ulimit -v` (RLIMIT_AS) is 100.0 MiB, of which "
                      "40.0 MiB is in use: 60.0 MiB left: lower cache.num_blocks"),
            std::string::npos)
      << *why;
  EXPECT_FALSE(memory_refusal("s", c, {.address_space = ulimit_v(100 * MiB, 5 * MiB)}));
}

TEST(MemoryFit, UlimitVCountsTheCheckerThreadsReservations) {
  RunCost c = cost_of(80 * MiB, 10 * MiB);
  c.references_at_once = 8;
  MemoryLimits l{.address_space = ulimit_v(1000 * MiB, 10 * MiB)};
  l.thread_stack = 8 * MiB;
  l.thread_arena = 64 * MiB;
  l.checker_threads = 4;  // 4 cores: 3 threads besides the calling one, 216 MiB
  EXPECT_FALSE(memory_refusal("s", c, l));  // 90 + 216 <= 990
  l.address_space = ulimit_v(300 * MiB, 10 * MiB);
  const auto why = memory_refusal("s", c, l);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("about 306.0 MiB of address space: the estimate, 90.0 MiB (`kvcheck "
                      "validate FILE` itemises it), and 216.0 MiB for the stack and malloc arena "
                      "of 3 more checker threads"),
            std::string::npos)
      << *why;
  c.references_at_once = 1;  // one reference at a time: no thread besides the calling one
  EXPECT_FALSE(memory_refusal("s", c, l));
}

TEST(MemoryFit, OnAGpuTheAddressSpaceHoldsTheDevicePartToo) {
  const RunCost c = cost_of(80 * MiB, 10 * MiB);
  MemoryLimits l{.host_available = 1000 * MiB, .device_free = 1000 * MiB, .device_is_host = false};
  l.data = MemoryCap{.name = "`ulimit -d` (RLIMIT_DATA)", .limit = 60 * MiB, .used = 0};
  EXPECT_FALSE(memory_refusal("s", c, l)) << "RLIMIT_DATA holds the host part only";
  l.address_space = ulimit_v(60 * MiB, 0);
  const auto why = memory_refusal("s", c, l);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("90.0 MiB (`kvcheck validate FILE` itemises it), device memory included"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("`ulimit -v` (RLIMIT_AS) is 60.0 MiB"), std::string::npos) << *why;
}

TEST(MemoryFit, UlimitDCountsTheHostPartAndTheThreadStacks) {
  RunCost c = cost_of(80 * MiB, 10 * MiB);
  c.references_at_once = 2;
  MemoryLimits l{.data = MemoryCap{.name = "`ulimit -d` (RLIMIT_DATA)", .limit = 95 * MiB,
                                   .used = 1 * MiB}};
  EXPECT_FALSE(memory_refusal("s", c, l)) << "one thread: no thread besides the calling one";
  l.checker_threads = 2;
  l.thread_stack = 8 * MiB;
  l.thread_arena = 64 * MiB;  // reserved, not writable: not in VmData
  const auto why = memory_refusal("s", c, l);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("about 98.0 MiB of host memory: the estimate, 90.0 MiB"), std::string::npos)
      << *why;
  EXPECT_NE(why->find("8.0 MiB for the stack of 1 more checker thread but"), std::string::npos)
      << *why;
  EXPECT_NE(why->find("`ulimit -d` (RLIMIT_DATA) is 95.0 MiB, of which 1.0 MiB is in use: "
                      "94.0 MiB left"),
            std::string::npos)
      << *why;
}

TEST(MemoryFit, TheCgroupIsNamedByItsPath) {
  const auto why = memory_refusal(
      "s", cost_of(80 * MiB, 10 * MiB),
      {.host_available = 1000 * MiB,
       .cgroup = MemoryCap{.name = "the cgroup /sys/fs/cgroup/ci.slice/job (memory.max)",
                           .limit = 100 * MiB, .used = 30 * MiB}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("90.0 MiB of host memory (estimate; `kvcheck validate FILE` itemises it) "
                      "but the cgroup /sys/fs/cgroup/ci.slice/job (memory.max) is 100.0 MiB, of "
                      "which 30.0 MiB is in use: 70.0 MiB left"),
            std::string::npos)
      << *why;
}

TEST(MemoryFit, TheLimitShortOfTheMostIsNamed) {
  const RunCost c = cost_of(80 * MiB, 10 * MiB);
  const MemoryCap cgroup{.name = "the cgroup /sys/fs/cgroup/a (memory.max)", .limit = 70 * MiB};
  const auto as = memory_refusal("s", c,
                                 {.host_available = 85 * MiB,
                                  .cgroup = cgroup,
                                  .address_space = ulimit_v(60 * MiB, 10 * MiB)});
  ASSERT_TRUE(as);
  EXPECT_NE(as->find("`ulimit -v`"), std::string::npos) << *as;
  EXPECT_EQ(as->find("cgroup"), std::string::npos) << *as;
  EXPECT_EQ(as->find("available"), std::string::npos) << *as;
  const auto cg = memory_refusal(
      "s", c,
      {.host_available = 85 * MiB, .cgroup = cgroup, .address_space = ulimit_v(80 * MiB, 0)});
  ASSERT_TRUE(cg);
  EXPECT_NE(cg->find("the cgroup /sys/fs/cgroup/a"), std::string::npos) << *cg;
}

TEST(MemoryFit, TheHostHintNeedsRoomUnderEveryHostLimit) {
  const RunCost c = cost_of(80 * MiB, 10 * MiB);
  MemoryLimits l{.host_available = 1000 * MiB, .device_free = 40 * MiB, .device_is_host = false};
  const auto roomy = memory_refusal("s", c, l);
  ASSERT_TRUE(roomy);
  EXPECT_NE(roomy->find("--device host"), std::string::npos) << *roomy;
  // 50 left: room for the host part (10) on the GPU, not for all of it (90) on the host.
  l.data = MemoryCap{.name = "`ulimit -d` (RLIMIT_DATA)", .limit = 200 * MiB, .used = 150 * MiB};
  const auto capped = memory_refusal("s", c, l);
  ASSERT_TRUE(capped);
  EXPECT_NE(capped->find("the device has 40.0 MiB free"), std::string::npos) << *capped;
  EXPECT_EQ(capped->find("--device host"), std::string::npos) << *capped;
}

// ---- kvcheck under a real `ulimit -v` / `ulimit -d` ----

// A KV cache of about 1 GiB that the run barely touches (two short requests): a large estimate, a
// run of a fraction of a second.
const char* kRoomyCache = R"({
  "format": 1, "name": "roomy", "seed": 3,
  "model": {"layers": 1},
  "cache": {"num_blocks": 500000},
  "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4]}
})";

class MemoryFitUlimit : public test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no `ulimit -v` here";
#endif
    const LoadResult loaded = load_scenarios({write("roomy.json", kRoomyCache).string()});
    ASSERT_EQ(loaded.valid.size(), 1u);
    const RunCost cost = estimate_run_cost(loaded.valid[0].scenario);
    estimate_ = cost.total_bytes();
    // Where this machine cannot hold it even without a ulimit, the 1.1x run would be refused too.
    MemoryLimits here = host_memory_limits();
    here.address_space.reset();
    here.data.reset();
    if (auto why = memory_refusal("roomy", cost, here)) GTEST_SKIP() << *why;
    for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
      rlimit r{};
      ::getrlimit(resource, &r);
      if (r.rlim_max != RLIM_INFINITY && r.rlim_max < static_cast<rlim_t>(estimate_ * 2))
        GTEST_SKIP() << "a hard ulimit below 2x the estimate: 1.1x cannot be set here";
    }
  }

  // `kvcheck ARGS` with `ulimit FLAG` set to `bytes` in the shell that execs it.
  test::CliRun kvcheck_under(const char* flag, int64_t bytes, const std::string& args) {
    const std::string shell = "ulimit " + std::string(flag) + " " + std::to_string(bytes / 1024) +
                              " && exec '" KVCHECK_BINARY "' " + args;
    const test::fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const std::string cmd = "cd '" + dir_.string() + "' && NO_COLOR=1 bash -c \"" + shell +
                            "\" >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    test::CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = test::read_file(out);
    r.err = test::read_file(err);
    return r;
  }

  int64_t estimate_ = 0;
};

// The limits are plain multiples of the estimate, no baseline added: the estimate (999 MiB)
// dwarfs what kvcheck maps before the check (VmSize 8.6 MiB measured) and what it counts for its
// one checker thread (72 MiB: stack and malloc arena). Measured on a 2-core VM: the run works down
// to `ulimit -v` 1002 MiB and the check lets it through from 1080 MiB (1.1x is 1099 MiB); 0.5x
// is refused before anything is allocated.
TEST_F(MemoryFitUlimit, UlimitVAt1_1xRunsAnd0_5xIsRefused) {
  const test::CliRun ok = kvcheck_under("-v", estimate_ * 11 / 10, "run roomy.json --out ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(files_under("ok").size(), 1u);

  const test::CliRun no = kvcheck_under("-v", estimate_ / 2, "run roomy.json --out no");
  EXPECT_EQ(no.exit_code, 3) << no.err;
  EXPECT_TRUE(test::contains(no.err, "roomy needs about")) << no.err;
  EXPECT_TRUE(test::contains(no.err, "`kvcheck validate FILE` itemises it")) << no.err;
  EXPECT_TRUE(test::contains(no.err, "but `ulimit -v` (RLIMIT_AS) is ")) << no.err;
  EXPECT_TRUE(test::contains(no.err, " left: lower cache.num_blocks")) << no.err;
  EXPECT_TRUE(files_under("no").empty());
}

// The same under `ulimit -d`: the KV cache is a private writable mapping, counted in VmData.
// Measured: runs down to 994 MiB, let through from 1008 MiB.
TEST_F(MemoryFitUlimit, UlimitDAt1_1xRunsAnd0_5xIsRefused) {
  const test::CliRun ok = kvcheck_under("-d", estimate_ * 11 / 10, "run roomy.json --out ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  const test::CliRun no = kvcheck_under("-d", estimate_ / 2, "run roomy.json --out no");
  EXPECT_EQ(no.exit_code, 3) << no.err;
  EXPECT_TRUE(test::contains(no.err, "but `ulimit -d` (RLIMIT_DATA) is ")) << no.err;
  EXPECT_TRUE(test::contains(no.err, " left: lower cache.num_blocks")) << no.err;
  EXPECT_TRUE(files_under("no").empty());
}

}  // namespace
}  // namespace kv::cli
