// jobs_test.cpp — `kvcheck run -j N`: the scenarios run at once in worker processes and their
// results are the serial run's; each scenario's table comes whole; the summary, the files and
// JUnit count every run; a crashing backend, --timeout-per-scenario, --exitfirst and --max-seconds
// keep their meaning; scenarios that do not fit in memory together wait for one another.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

// The fields that say when, how long and how a result was made (scripts/kvcheck_lib.py's TIMINGS
// and RUN_IDENTITY): they differ between two runs of the same scenario; nothing else may.
json without_timing(json doc) {
  const char* const timings[] = {"seconds", "check_seconds", "check_wait_seconds",
                                 "reference_seconds", "forward_seconds", "zero_init_seconds"};
  for (const char* key : timings) doc.erase(key);
  for (const char* key : {"build", "command_line", "started_at"}) doc.erase(key);
  for (json& epoch : doc["epochs"])
    for (const char* key : timings) epoch.erase(key);
  if (doc.contains("backend") && doc["backend"].is_object()) doc["backend"].erase("load_seconds");
  return doc;
}

class Jobs : public CliTest {
 protected:
  // Four small scenarios, one of them (p.json) corrupt as its regression makes it.
  void write_four() {
    write("a.json", kTinyScenario);
    write("b.json", kTinyScenario);
    std::string p = kPoisonScenario;
    p.insert(p.rfind('}'),
             ", \"regressions\": [\"new-blocks-not-zeroed\"], \"expect\": \"corrupt\"");
    write("p.json", p);
    write("q.json", kPoisonScenario);
  }
};

TEST_F(Jobs, AtOnceGivesTheSerialRunsResultsAndCountsEveryRun) {
  write_four();
  const CliRun serial = kvcheck("run a.json b.json p.json q.json --out serial");
  const CliRun at_once =
      kvcheck("run a.json b.json p.json q.json -j 3 --out at-once --junit j.xml");
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  ASSERT_EQ(at_once.exit_code, 0) << at_once.err;
  EXPECT_TRUE(contains(at_once.err, "-j 3: up to 3 scenarios at once")) << at_once.err;
  EXPECT_TRUE(contains(at_once.out, "4 passed, 0 failed, 0 could not run, 0 errors in"))
      << at_once.out;
  std::vector<std::string> files = files_under("at-once");
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files, (std::vector<std::string>{"a.json", "b.json", "p.json", "q.json"}));
  for (const std::string& f : files) {
    const json a = json::parse(read_file(dir_ / "at-once" / f));
    const json s = json::parse(read_file(dir_ / "serial" / f));
    EXPECT_EQ(without_timing(a), without_timing(s)) << f << " differs from the serial run's";
  }
  EXPECT_EQ(json::parse(read_file(dir_ / "at-once" / "p.json"))["verdict"], "corrupt");
  // Each table whole, once per scenario (the parent prints a finished scenario's table in one
  // piece; the workers print none).
  size_t tables = 0;
  for (size_t at = at_once.out.find("scenario: "); at != std::string::npos;
       at = at_once.out.find("scenario: ", at + 1))
    ++tables;
  EXPECT_EQ(tables, 4u) << at_once.out;
  const std::string junit = read_file(dir_ / "j.xml");
  EXPECT_TRUE(contains(junit, "tests=\"4\"")) << junit;
  EXPECT_TRUE(contains(junit, "failures=\"0\"")) << junit;
}

TEST_F(Jobs, JsonIsStillOneDocumentWithEveryResult) {
  write_four();
  const CliRun r = kvcheck("run a.json b.json p.json q.json -j 4 --json --no-out");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json doc = run_document(r);  // one kvcheck.run/1 document, its counts and exit code
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_EQ(doc["results"].size(), 4u);
  EXPECT_EQ(doc["summary"]["passed"], 4);
}

TEST_F(Jobs, ACrashingBackendIsThatScenariosErrorAndTheOthersRun) {
  write("a.json", kTinyScenario);
  std::string crash = kTinyScenario;
  crash.insert(crash.rfind('}'),
               ", \"backend\": {\"library\": \"" + test_plugin("crash") + "\"}");
  write("crash.json", crash);
  write("b.json", kTinyScenario);
  const CliRun r = kvcheck("run a.json crash.json b.json -j 2 --out out");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "2 passed, 0 failed, 0 could not run, 1 error in")) << r.out;
  EXPECT_TRUE(contains(r.err, "crashed (SIGSEGV)")) << r.err;
  // The file names its backend (cli/result_paths.h).
  const fs::path crashed = dir_ / "out" / "crash.kvtest_plugin_crash.json";
  EXPECT_EQ(json::parse(read_file(crashed))["error"]["kind"], "crash");
  EXPECT_EQ(json::parse(read_file(dir_ / "out" / "b.json"))["verdict"], "clean");
}

TEST_F(Jobs, ATimeoutPerScenarioStopsThatOneWhileTheOthersFinish) {
  write("op.json", kLongOpScenario);
  write("a.json", kTinyScenario);
  write("b.json", kTinyScenario);
  const CliRun r = kvcheck("run op.json a.json b.json -j 2 --timeout-per-scenario 3 --out out");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "2 passed, 0 failed, 0 could not run, 1 error in")) << r.out;
  EXPECT_EQ(json::parse(read_file(dir_ / "out" / "op.json"))["error"]["kind"], "timeout");
}

TEST_F(Jobs, ExitFirstStopsTheRunAndKillsTheScenariosStillRunning) {
  write("q.json", kPoisonScenario);  // fails: corrupt under its regression, expecting clean
  write("op.json", kLongOpScenario);
  write("z.json", kTinyScenario);
  const CliRun r = kvcheck(
      "run q.json op.json z.json -j 2 -x --regression new-blocks-not-zeroed --out out "
      "--junit j.xml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "--exitfirst")) << r.err;
  // q fails within a second; the long op (a minute) is killed; z waits for a free job and never
  // starts, or is killed.
  EXPECT_TRUE(contains(r.out, "0 passed, 1 failed, 0 could not run, 0 errors, 2 not run in"))
      << r.out;
  EXPECT_EQ(files_under("out"), std::vector<std::string>{"q.json"});
  const std::string junit = read_file(dir_ / "j.xml");
  EXPECT_TRUE(contains(junit, "not run: --exitfirst ended the run at a miss")) << junit;
}

TEST_F(Jobs, MaxSecondsStopsTheWholeRun) {
  write("op.json", kLongOpScenario);
  write("op2.json", kLongOpScenario);
  const CliRun r = kvcheck("run op.json op2.json -j 2 --max-seconds 2 --out out");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "--max-seconds 2 reached while running long-op")) << r.err;
  EXPECT_TRUE(files_under("out").empty());
}

// 9.6 MiB each (kvcheck validate): under --max-memory 15M one fits, two do not, so the second
// starts only when the first has ended; under 40M both start at once.
TEST_F(Jobs, ScenariosThatDoNotFitTogetherWaitForOneAnother) {
  write("a.json", kTinyScenario);
  write("b.json", kTinyScenario);
  const CliRun tight = kvcheck("run a.json b.json -j 2 --max-memory 15M --no-out");
  EXPECT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_TRUE(contains(tight.err, "started tiny (2 of 2; 1 running)")) << tight.err;
  const CliRun roomy = kvcheck("run a.json b.json -j 2 --max-memory 40M --no-out");
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
  EXPECT_TRUE(contains(roomy.err, "started tiny (2 of 2; 2 running)")) << roomy.err;
}

TEST_F(Jobs, OutOfRangeIsRefusedNamingTheOption) {
  write("a.json", kTinyScenario);
  for (const char* n : {"0", "65", "x"}) {
    const CliRun r = kvcheck(std::string("run a.json -j ") + n);
    EXPECT_EQ(r.exit_code, 2) << n;
    EXPECT_TRUE(contains(r.err, "--jobs")) << r.err;
    EXPECT_TRUE(files_under("results").empty());
  }
}

}  // namespace
}  // namespace kv::test
