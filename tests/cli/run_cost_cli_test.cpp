// run_cost_cli_test.cpp — issue 22's cost and time bounds, end to end: `validate` prints the
// estimate; `run` refuses what does not fit this machine or --max-memory (exit 3, naming the
// fields), and a field over its absolute limit with exit 2; idle stretches before a late arrival
// are skipped; --max-seconds stops a long run with exit 3 and no result file; a log (stderr not a
// terminal) gets one line per epoch.
#include "cli_runner.h"

namespace kv::test {
namespace {

using RunCost = CliTest;

// Valid, but its KV cache (2 x 256 tokens x 64 heads x 256 x 4 bytes x 64 layers x 10^6 blocks,
// about 2 PiB) fits no machine.
const char* kHugeCache = R"({
  "format": 1, "name": "huge",
  "model": {"layers": 64, "num_q_heads": 64, "num_kv_heads": 64, "head_dim": 256},
  "cache": {"num_blocks": 1000000, "block_size": 256, "dtype": "f32"},
  "workload": {"requests": 1, "prompt_len": 8, "new_tokens": 2}
})";

// Enough work for many seconds on the host: long requests, many epochs.
const char* kLongRun = R"({
  "format": 1, "name": "long",
  "model": {"layers": 2},
  "cache": {"num_blocks": 2048},
  "workload": {"requests": 64, "prompt_len": [400, 600], "new_tokens": [200, 300],
               "epochs": 50}
})";

TEST_F(RunCost, ValidatePrintsTheEstimate) {
  write("a.json", kTinyScenario);
  const CliRun r = kvcheck("validate a.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("ok a.json\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "estimated memory: about")) << r.out;
  EXPECT_TRUE(contains(r.out, "KV cache")) << r.out;
  EXPECT_TRUE(contains(r.out, "cache.num_blocks")) << r.out;
  EXPECT_TRUE(contains(r.out, "estimated work: 2 epoch(s)")) << r.out;
  EXPECT_FALSE(contains(r.out, "note:")) << r.out;
}

TEST_F(RunCost, ACacheNoMachineHoldsIsValidButCannotRunHere) {
  write("huge.json", kHugeCache);
  const CliRun v = kvcheck("validate huge.json");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(contains(v.out, "PiB")) << v.out;
  EXPECT_TRUE(contains(v.out, "note: `kvcheck run --device host` would refuse it here: huge "
                               "needs about"))
      << v.out;
  const CliRun r = kvcheck("run huge.json");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // The host limit it is short of the most: the machine's memory, or a cgroup or ulimit below it.
  EXPECT_TRUE(contains(r.err, "this machine has") || contains(r.err, "the cgroup ") ||
              contains(r.err, "`ulimit -"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "lower cache.num_blocks")) << r.err;
  EXPECT_FALSE(contains(r.err, "--device host")) << r.err;
  EXPECT_TRUE(files_under("results").empty());
  EXPECT_EQ(kvcheck("run huge.json --bisect").exit_code, 125);
  // No GPU here (or none built): its "use --device host" must not stand alone.
  const CliRun cuda = kvcheck("run huge.json --device cuda");
  EXPECT_EQ(cuda.exit_code, 3) << cuda.err;
  if (contains(cuda.err, "--device cuda: ")) {  // no GPU: else the device's free memory refuses
    EXPECT_TRUE(contains(cuda.err, "but --device host cannot run it either: huge needs about"))
        << cuda.err;
    write("a.json", kTinyScenario);
    EXPECT_FALSE(contains(kvcheck("run a.json --device cuda").err, "cannot run it either"));
  }
}

TEST_F(RunCost, MaxMemoryRefusesWhatIsAboveTheBudget) {
  write("a.json", kTinyScenario);
  const CliRun r = kvcheck("run a.json --max-memory 1M");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "above --max-memory 1.0 MiB")) << r.err;
  EXPECT_TRUE(contains(r.err, ": lower ")) << r.err;
  EXPECT_EQ(kvcheck("run a.json --max-memory 4G").exit_code, 0);
  const CliRun bad = kvcheck("run a.json --max-memory lots");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST_F(RunCost, PrefixGroupsAreBoundedByTheFieldTable) {
  write("groups.json", R"({"format": 1, "workload": {"prefix_groups": 1000000000}})");
  const CliRun r = kvcheck("run groups.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "/workload/prefix_groups")) << r.err;
  EXPECT_TRUE(contains(r.err, "100000")) << r.err;
}

TEST_F(RunCost, AFirstArrivalAtTheLastStepRunsAtOnce) {
  write("late.json", R"({"format": 1, "name": "late", "model": {"layers": 1},
    "workload": {"requests": 3, "prompt_len": [4, 8], "new_tokens": [2, 4],
                 "arrival_step": [2147483600, 2147483647], "epochs": 2}})");
  const CliRun r = kvcheck("run late.json --max-seconds 60");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "clean")) << r.out;
}

TEST_F(RunCost, MaxSecondsStopsALongRunAndWritesNoResult) {
  write("long.json", kLongRun);
  const CliRun r = kvcheck("run long.json --max-seconds 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "--max-seconds 1 reached while running long")) << r.err;
  EXPECT_TRUE(contains(r.err, "of 50 epoch(s) and")) << r.err;
  EXPECT_TRUE(contains(r.err, "no result file")) << r.err;
  EXPECT_TRUE(files_under("results").empty());
  EXPECT_EQ(kvcheck("run long.json --max-seconds 1 --bisect").exit_code, 125);
}

TEST_F(RunCost, ALogGetsOneLinePerEpoch) {
  write("a.json", kTinyScenario);
  const CliRun r = kvcheck("run a.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "tiny: epoch 1/2:")) << r.err;
  EXPECT_TRUE(contains(r.err, "tiny: epoch 2/2:")) << r.err;
  EXPECT_FALSE(contains(r.err, "\r")) << "no progress line when stderr is not a terminal";
  EXPECT_FALSE(contains(kvcheck("run a.json -q").err, "epoch 1/2")) << "-q shows no progress";
}

// On a terminal (a pty from script(1)) the progress line is rewritten in place, with an ETA.
TEST_F(RunCost, ATerminalGetsAProgressLineWithAnEta) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  write("long.json", kLongRun);
  const fs::path log = dir_ / "tty.log";
  const std::string cmd = "cd '" + dir_.string() + "' && script -qec \"NO_COLOR=1 '" +
                          KVCHECK_BINARY "' run long.json --max-seconds 3\" /dev/null > '" +
                          log.string() + "' 2>&1";
  (void)std::system(cmd.c_str());
  const std::string tty = read_file(log);
  EXPECT_TRUE(contains(tty, "\r\x1b[Klong: epoch 1/50, step ")) << tty;
  EXPECT_TRUE(contains(tty, "ETA")) << tty;
  EXPECT_TRUE(contains(tty, "--max-seconds 3 reached")) << tty;
}

}  // namespace
}  // namespace kv::test
