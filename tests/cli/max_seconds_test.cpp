// max_seconds_test.cpp — --max-seconds ends a run within about a second of its deadline even when
// one op of a step runs for a minute: kvcheck's host ops poll the deadline between rows
// (kernels/host/poll.h), in kvcheck's own process and in a backend's worker, and a worker inside a
// backend call past the deadline is stopped (plugin/worker.h). Exit 3, the deadline's message and
// no result file, as for a deadline met between steps (run_cost_cli_test.cpp).
#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"
#include "util/stopwatch.h"

namespace kv::test {
namespace {

// The run ends this long after its deadline at most. The overshoot itself is milliseconds (a poll
// every few milliseconds of an op) plus the teardown, or kStopGrace for a worker in a backend's
// call; the rest is slack for a loaded 2-core machine and the process's start.
constexpr double kSlack = 3.0;

class MaxSeconds : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    write("op.json", kLongOpScenario);
  }

  // Runs `run op.json --max-seconds DEADLINE ARGS` and checks what every stop has: exit 3, the
  // deadline's message, no result file, and an end within `overshoot` seconds of the deadline.
  CliRun stop_within(int deadline, double overshoot, const std::string& args) {
    const auto t0 = std::chrono::steady_clock::now();
    CliRun r = kvcheck("run op.json --max-seconds " + std::to_string(deadline) + " " + args);
    const double seconds = seconds_since(t0);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "--max-seconds " + std::to_string(deadline) +
                                    " reached while running long-op"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "no result file is written for it")) << r.err;
    EXPECT_TRUE(files_under("results").empty());
    EXPECT_LT(seconds, deadline + overshoot)
        << "the run went on " << seconds - deadline << " s past its deadline";
    return r;
  }
};

TEST_F(MaxSeconds, AnOpLongerThanTheDeadlineEndsWithinIt) {
  const CliRun r = stop_within(2, kSlack, "");
  EXPECT_TRUE(contains(r.err, "0 of 1 epoch(s) and 0 step(s)")) << "stopped within step 0";
}

TEST_F(MaxSeconds, AnOpLongerThanTheDeadlineEndsWithinItInABackendsWorker) {
  // The attention on the built-in host device, in the worker the backend's run needs.
  const CliRun r = stop_within(
      2, kSlack, "--backend '" + kHostPlugin + "' --backend-op varlen_attention=builtin");
  EXPECT_TRUE(contains(r.err, "0 of 1 epoch(s) and 0 step(s)")) << r.err;
}

// The two below must be inside the backend's op when the deadline comes: 5 s, as the worker's
// start and the steps before the op take 2 s and more under the sanitizers on a loaded machine.
TEST_F(MaxSeconds, ABackendOpLongerThanTheDeadlineIsStopped) {
  const CliRun r = stop_within(5, 1 + kSlack, "--backend '" + kHostPlugin + "'");
  EXPECT_TRUE(contains(r.err, "backend op varlen_attention had not returned at epoch 1, step 0"))
      << r.err;
}

TEST_F(MaxSeconds, ABackendOpThatNeverReturnsIsStoppedAtTheDeadlineNotTheTimeout) {
  const CliRun r = stop_within(
      5, 1 + kSlack, "--backend '" + test_plugin("hang") + "' --backend-timeout 600");
  EXPECT_TRUE(contains(r.err, "backend op write_kv had not returned")) << r.err;
}

// --timeout-per-scenario: the scenario past it is stopped as --max-seconds stops a run (between
// rows of an op, or the worker inside a backend call), but it is a result, verdict error of kind
// timeout, and the run goes on with the next scenario.
class TimeoutPerScenario : public MaxSeconds {
 protected:
  void expect_timeout_then_next(const std::string& args, int timeout) {
    write("tiny.json", kTinyScenario);
    const auto t0 = std::chrono::steady_clock::now();
    CliRun r = kvcheck("run op.json tiny.json --out out --junit j.xml --timeout-per-scenario " +
                       std::to_string(timeout) + " " + args);
    const double seconds = seconds_since(t0);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_LT(seconds, timeout + 1 + kSlack + 3) << "the scenario ran past its limit";
    EXPECT_TRUE(contains(r.err, "long-op: the scenario ran past --timeout-per-scenario " +
                                    std::to_string(timeout) + " s and was stopped (exit 1); the "
                                    "run goes on"))
        << r.err;
    EXPECT_TRUE(contains(r.out, "1 passed, 0 failed, 0 could not run, 1 error in")) << r.out;
    std::vector<std::string> files = files_under("out");
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files.size(), 2u);
    const nlohmann::json stopped = nlohmann::json::parse(read_file(dir_ / "out" / files[0]));
    EXPECT_EQ(stopped["verdict"], "error");
    EXPECT_EQ(stopped["error"]["kind"], "timeout");
    const nlohmann::json next = nlohmann::json::parse(read_file(dir_ / "out" / files[1]));
    EXPECT_EQ(next["verdict"], "clean");
    const std::string junit = read_file(dir_ / "j.xml");
    EXPECT_TRUE(contains(junit, "type=\"timeout\"")) << junit;
    EXPECT_TRUE(contains(junit, "errors=\"1\"")) << junit;
  }
};

TEST_F(TimeoutPerScenario, StopsTheScenarioAndTheRunGoesOn) { expect_timeout_then_next("", 2); }

TEST_F(TimeoutPerScenario, StopsAWorkerInsideABackendCallAndTheRunGoesOn) {
  expect_timeout_then_next("--backend '" + kHostPlugin + "'", 5);
}

TEST_F(TimeoutPerScenario, AnEarlierMaxSecondsStillStopsTheWholeRun) {
  const CliRun r = stop_within(2, kSlack, "--timeout-per-scenario 60");
  EXPECT_FALSE(contains(r.err, "timeout-per-scenario 60 reached")) << r.err;
}

}  // namespace
}  // namespace kv::test
