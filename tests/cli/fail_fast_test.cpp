// fail_fast_test.cpp — kvcheck run --fail-fast: a run that fails a check ends there with the
// verdict, expectation and first failure the whole run gives; a clean run runs whole; the result
// and the table say it stopped. In-process on the host device and through a plugin in a worker
// process (the overlapped checks of a GPU run: check_pipeline_test.cpp).
#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

const std::string kScenarios = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/";

int64_t total_steps(const json& doc) {
  int64_t n = 0;
  for (const auto& e : doc["epochs"]) n += e["steps"].get<int64_t>();
  return n;
}

class FailFast : public CliTest {
 protected:
  // The scenario whole and with --fail-fast (`extra` options for both): the same exit code,
  // verdict and first failure; the fail-fast run ran fewer steps and says it stopped.
  void expect_same_verdict_in_fewer_steps(const std::string& file, const std::string& extra) {
    const CliRun whole = kvcheck("run '" + file + "' " + extra + " --json -q --out whole");
    const CliRun fast =
        kvcheck("run '" + file + "' " + extra + " --fail-fast --json -q --out fast");
    ASSERT_EQ(fast.exit_code, whole.exit_code) << file << '\n' << fast.err;
    const json w = only_result(whole), f = only_result(fast);
    EXPECT_EQ(w["verdict"], "corrupt") << file;
    EXPECT_EQ(f["verdict"], w["verdict"]) << file;
    EXPECT_EQ(f["meets_expectation"], w["meets_expectation"]) << file;
    EXPECT_EQ(f["first_failure"], w["first_failure"]) << file;
    EXPECT_FALSE(w["stopped_at_first_failure"].get<bool>()) << file;
    EXPECT_TRUE(f["stopped_at_first_failure"].get<bool>()) << file;
    EXPECT_LT(total_steps(f), total_steps(w)) << file;
    EXPECT_LE(f["epochs"].size(), w["epochs"].size()) << file;
  }
};

}  // namespace

TEST_F(FailFast, EndsAtTheFirstFailureWithTheWholeRunsVerdictAndFirstFailure) {
  // A failure in epoch 2 of 6 (a NaN of recycled blocks), in epoch 1 of 2 (a drift of 2.1e-2,
  // seed 003's stale fp8 MLA plan), and in epoch 2 of 4 (seed 000's hybrid pool).
  for (const char* f : {"regressions/new-blocks-not-zeroed.json",
                        "seeds/003-fp8-mla-graph-metadata.json",
                        "seeds/000-mla-linear-hybrid-not-zeroed.json"})
    expect_same_verdict_in_fewer_steps(kScenarios + f, "");
}

TEST_F(FailFast, ThroughAPluginInAWorkerProcess) {
  // The run and its stop happen in the worker; the parent reports what it sent back.
  expect_same_verdict_in_fewer_steps(kScenarios + "regressions/new-blocks-not-zeroed.json",
                                     "--backend '" + kHostPlugin + "'");
}

TEST_F(FailFast, ACleanRunRunsWhole) {
  const std::string file = kScenarios + "regressions/new-blocks-not-zeroed.json";
  const CliRun whole = kvcheck("run '" + file + "' --no-regressions --expect clean --json -q "
                               "--out whole");
  const CliRun fast = kvcheck("run '" + file + "' --no-regressions --expect clean --fail-fast "
                              "--json -q --out fast");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  const json w = only_result(whole), f = only_result(fast);
  EXPECT_EQ(f["verdict"], "clean");
  EXPECT_FALSE(f["stopped_at_first_failure"].get<bool>());
  EXPECT_EQ(f["epochs"].size(), w["epochs"].size());
  EXPECT_EQ(total_steps(f), total_steps(w));
}

TEST_F(FailFast, AnUnexpectedFailureStillFailsTheRunAndTheTableSaysItStopped) {
  // What git bisect run sees: the regression on, clean expected.
  const std::string file = kScenarios + "regressions/new-blocks-not-zeroed.json";
  const CliRun r = kvcheck("run '" + file + "' --expect clean --fail-fast --out out");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "stopped at the first failure (--fail-fast)")) << r.out;
  const json doc = json::parse(read_file(dir_ / "out" / "new-blocks-not-zeroed.json"));
  EXPECT_EQ(doc["verdict"], "corrupt");
  EXPECT_TRUE(doc["stopped_at_first_failure"].get<bool>());
}

}  // namespace kv::test
