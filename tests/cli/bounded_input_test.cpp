// bounded_input_test.cpp — hostile input files end in exit 2 with a message naming the file (and
// the JSON pointer where that applies), never a crash, a hang or an exhausted machine: nesting
// 50,000 deep, a FIFO, a symlink to /dev/zero, a directory, a file over the 4 MiB cap.
#include <sys/stat.h>

#include "cli_runner.h"

namespace kv::test {
namespace {

using BoundedInput = CliTest;

// {"format": 1, "workload": {"requests": <`open` nested `depth` times>}}
std::string nested(const char* open, const char* close, std::size_t depth, bool keyed) {
  std::string s = R"({"format": 1, "workload": {"requests": )";
  for (std::size_t i = 0; i < depth; ++i) s += keyed ? std::string(open) + "\"k\": " : open;
  s += "1";
  for (std::size_t i = 0; i < depth; ++i) s += close;
  return s + "}}";
}

TEST_F(BoundedInput, ArrayNested50000DeepIsExit2WithItsPointer) {
  write("deep.json", nested("[", "]", 50000, false));
  for (const char* cmd : {"validate deep.json", "run deep.json --out out"}) {
    CliRun r = kvcheck(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    // The 65th level opens at the 62nd array below /workload/requests.
    std::string pointer = "/workload/requests";
    for (int i = 0; i < 62; ++i) pointer += "/0";
    EXPECT_TRUE(contains(r.err, "deep.json: " + pointer + ": arrays and objects nest deeper "
                                "than 64 levels")) << r.err;
  }
  EXPECT_TRUE(files_under("out").empty());
}

TEST_F(BoundedInput, ObjectNested100000DeepIsExit2) {
  write("deep.json", nested("{", "}", 100000, true));
  CliRun r = kvcheck("validate deep.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "deep.json: /workload/requests/k/k/k/")) << r.err;
  EXPECT_TRUE(contains(r.err, "nest deeper than 64 levels")) << r.err;
}

TEST_F(BoundedInput, NestingAtTheLimitIsNoDepthError) {
  // 64 levels in all: the top-level object, "workload", and 62 arrays as the value.
  write("ok.json", nested("[", "]", 62, false));
  CliRun r = kvcheck("validate ok.json");
  EXPECT_EQ(r.exit_code, 2) << "requests must be an integer";
  EXPECT_FALSE(contains(r.err, "nest deeper")) << r.err;
  EXPECT_TRUE(contains(r.err, "/workload/requests: got")) << r.err;
}

TEST_F(BoundedInput, FifoIsExit2NamingThePathAndNeverBlocks) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe.json").c_str(), 0600), 0);
  for (const char* cmd : {"validate", "run"}) {
    // `timeout` turns a hang into 124 (a FIFO without a writer blocks a plain open forever).
    CliRun r = kvcheck_env("timeout 20", std::string(cmd) + " pipe.json");
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "pipe.json: is a FIFO (named pipe), not a regular file")) << r.err;
  }
}

TEST_F(BoundedInput, SymlinkToDevZeroIsExit2NotAnAllocation) {
  fs::create_symlink("/dev/zero", dir_ / "zero.json");
  CliRun r = kvcheck("validate zero.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "zero.json: is a character device, not a regular file")) << r.err;
}

// A folder stands for the scenarios under it (suite_run_test.cpp); one that holds none is exit 2
// naming it, for every command that reads scenarios.
TEST_F(BoundedInput, EmptyDirectoryIsExit2NamingThePath) {
  fs::create_directories(dir_ / "adir.json");
  for (const std::string cmd : {"run", "validate"}) {
    CliRun r = kvcheck(cmd + " adir.json");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "adir.json: the folder holds no scenario file")) << r.err;
  }
}

TEST_F(BoundedInput, FileOverTheCapIsExit2) {
  // Valid JSON, 4 MiB + 1 byte: refused for its size, not parsed.
  write("big.json", std::string(R"({"format": 1})") + std::string((4u << 20) + 1 - 13, ' '));
  CliRun r = kvcheck("validate big.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "big.json: is larger than 4194304 bytes")) << r.err;
}

}  // namespace
}  // namespace kv::test
