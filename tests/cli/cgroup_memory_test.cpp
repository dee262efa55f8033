// cgroup_memory_test.cpp — finding this process's memory cgroup from /proc/self/cgroup and
// mountinfo (v2, hybrid v1, a container's view) and reading the tightest limit up the tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cgroup_memory.h"
#include "tests/support/temp_dir.h"

namespace kv::cli {
namespace {

namespace fs = std::filesystem;

// The memory cgroups found from /proc/self/cgroup and mountinfo texts, one per line:
// "dir (top TOP, v1|v2)".
std::string found(const std::string& proc_self_cgroup, const std::string& mountinfo) {
  std::string text;
  for (const CgroupDir& d : memory_cgroup_dirs(proc_self_cgroup, mountinfo))
    text += d.dir + " (top " + d.top + (d.v2 ? ", v2)\n" : ", v1)\n");
  return text;
}

TEST(CgroupMemory, FindsTheV2CgroupUnderItsMount) {
  EXPECT_EQ(
      found("0::/user.slice/session-2.scope\n",
            "22 1 0:21 / /proc rw - proc proc rw\n"
            "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"),
      "/sys/fs/cgroup/user.slice/session-2.scope (top /sys/fs/cgroup, v2)\n");
}

// A hybrid host (this VM's layout): v2 mounted at unified/ without the memory controller, which
// is v1's, mounted at memory/.
TEST(CgroupMemory, OnAHybridHostV1sMemoryControllerComesSecond) {
  EXPECT_EQ(found("9:name=systemd:/\n4:memory:/process_api/63f4\n1:cpu:/\n0::/\n",
                  "40 30 0:35 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                  "41 30 0:36 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                  "48 30 0:43 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup/unified (top /sys/fs/cgroup/unified, v2)\n"
            "/sys/fs/cgroup/memory/process_api/63f4 (top /sys/fs/cgroup/memory, v1)\n");
}

// Without a cgroup namespace a container sees its full path but has only its own subtree mounted.
TEST(CgroupMemory, AContainersMountOfItsOwnSubtreeIsItsCgroup) {
  EXPECT_EQ(found("0::/docker/abc\n",
                  "30 25 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup (top /sys/fs/cgroup, v2)\n");
}

class CgroupTree : public test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::create_directories(dir_ / "a" / "b");
  }
  void put(const fs::path& rel, const std::string& file, const std::string& text) {
    std::ofstream(dir_ / rel / file) << text << '\n';
  }
  CgroupDir v2_at_b() const { return {(dir_ / "a" / "b").string(), dir_.string(), true}; }
};

TEST_F(CgroupTree, TheTightestAncestorIsTheLimit) {
  put("", "memory.max", "max");
  put("", "memory.current", "9000");
  put("a", "memory.max", "1000");
  put("a", "memory.current", "400");
  put("a/b", "memory.max", "max");
  put("a/b", "memory.current", "100");
  ASSERT_TRUE(has_memory_files(v2_at_b()));
  auto cap = cgroup_cap(v2_at_b());
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->limit, 1000);
  EXPECT_EQ(cap->left(), 600);
  EXPECT_EQ(cap->name, "the cgroup " + (dir_ / "a").string() + " (memory.max)");

  put("", "memory.max", "9050");  // the root has 50 left: tighter than a's 600
  cap = cgroup_cap(v2_at_b());
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->left(), 50);
  EXPECT_EQ(cap->name, "the cgroup " + dir_.string() + " (memory.max)");
}

TEST_F(CgroupTree, MaxEverywhereIsNoLimit) {
  put("a/b", "memory.max", "max");
  put("a/b", "memory.current", "100");
  EXPECT_FALSE(cgroup_cap(v2_at_b()));
}

TEST_F(CgroupTree, V1sNoLimitAndItsFileNames) {
  const CgroupDir v1{(dir_ / "a").string(), dir_.string(), false};
  EXPECT_FALSE(has_memory_files(v1));
  put("a", "memory.limit_in_bytes", "9223372036854771712");  // v1's "no limit"
  put("a", "memory.usage_in_bytes", "4096");
  EXPECT_TRUE(has_memory_files(v1));
  EXPECT_FALSE(cgroup_cap(v1));
  put("a", "memory.limit_in_bytes", "8192");
  const auto cap = cgroup_cap(v1);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->left(), 4096);
  EXPECT_NE(cap->name.find("(memory.limit_in_bytes)"), std::string::npos) << cap->name;
}

TEST(CgroupMemory, ThisProcessesCgroupReadsWithoutError) {
  if (const auto cap = this_cgroup_cap()) {  // none on a host without a memory limit
    EXPECT_GT(cap->limit, 0);
    EXPECT_NE(cap->name.find("the cgroup /"), std::string::npos) << cap->name;
  }
}

}  // namespace
}  // namespace kv::cli
