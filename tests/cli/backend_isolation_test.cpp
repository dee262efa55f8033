// backend_isolation_test.cpp — `kvcheck run --backend` with a plugin that takes its process down:
// it crashes (SIGSEGV), aborts, calls exit(0) or hangs inside write_kv, or returns an error
// status. Each is the scenario's own outcome, verdict "error", exit 1 whatever the scenario
// expects (also under --bisect): the message names the op and the signal, exit or hang, and the
// result file is whole, valid JSON with the error block, and alone in its folder.
#include <chrono>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"
#include "util/stopwatch.h"

namespace kv::test {
namespace {

using nlohmann::json;

class BackendIsolation : public CliTest {
 protected:
  // Runs tiny.json on plugin `kind` with `args`; checks what every error outcome shares and
  // returns the result's error block.
  json expect_error(const std::string& kind, const std::string& args, const std::string& what) {
    write("tiny.json", kTinyScenario);
    fs::remove_all(dir_ / "out");
    CliRun r = kvcheck("run tiny.json --out out " + args + " --backend " + test_plugin(kind));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.out, "verdict: error — backend op write_kv " + what)) << r.out;
    EXPECT_TRUE(contains(r.err, "backend op write_kv " + what)) << r.err;
    EXPECT_TRUE(contains(r.err, "a regression of the backend (exit 1)")) << r.err;
    // One result, named after the file and the plugin; no stray temp file.
    const std::string result = "tiny.kvtest_plugin_" + kind + ".json";
    EXPECT_EQ(files_under("out"), std::vector<std::string>{result});
    const json doc = json::parse(read_file(dir_ / "out" / result));
    EXPECT_EQ(doc["schema"], "kvcheck.result/2");
    EXPECT_EQ(doc["verdict"], "error");
    EXPECT_EQ(doc["meets_expectation"], false);
    EXPECT_TRUE(doc["first_failure"].is_null());
    EXPECT_EQ(doc["device"], "host");
    EXPECT_EQ(doc["device_info"]["kind"], "host");  // the parent reads the host itself
    EXPECT_GT(doc["device_info"]["hardware_threads"].get<int>(), 0);
    const json e = doc["error"];
    EXPECT_EQ(e["op"], "write_kv");
    EXPECT_GE(e["epoch"].get<int>(), 0);
    EXPECT_GE(e["step"].get<int>(), 0);
    EXPECT_TRUE(contains(e["message"].get<std::string>(), "backend op write_kv " + what));
    return e;
  }
};

TEST_F(BackendIsolation, ACrashIsAnErrorVerdictNamingTheOpAndTheSignal) {
  const json e = expect_error("crash", "", "crashed (SIGSEGV)");
  EXPECT_EQ(e["kind"], "crash");
  EXPECT_EQ(e["signal"], "SIGSEGV");
  EXPECT_FALSE(e.contains("exit_code"));
  // write_kv runs inside a layer: the error names it (tiny.json has attention layers only).
  EXPECT_EQ(e["layer_kind"], "attention");
  EXPECT_GE(e["layer"].get<int>(), 0);
  EXPECT_TRUE(contains(e["message"].get<std::string>(), "(attention)")) << e["message"];
}

TEST_F(BackendIsolation, ACrashIsExit1UnderBisectAndWhateverTheScenarioExpects) {
  expect_error("crash", "--bisect", "crashed (SIGSEGV)");
  expect_error("crash", "--expect corrupt", "crashed (SIGSEGV)");
  expect_error("crash", "--backend-sync", "crashed (SIGSEGV)");
}

TEST_F(BackendIsolation, AnAbortIsACrash) {
  const json e = expect_error("abort", "--bisect", "crashed (SIGABRT)");
  EXPECT_EQ(e["kind"], "crash");
  EXPECT_EQ(e["signal"], "SIGABRT");
}

TEST_F(BackendIsolation, Exit0InsideAnOpIsAnErrorNotAPass) {
  const json e = expect_error("exit0", "--expect corrupt", "exited the process (exit code 0)");
  EXPECT_EQ(e["kind"], "exit");
  EXPECT_EQ(e["exit_code"], 0);
  EXPECT_FALSE(e.contains("signal"));
}

TEST_F(BackendIsolation, AHangIsKilledAfterTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  const json e = expect_error("hang", "--backend-timeout 2", "did not return within 2 s");
  const double seconds = seconds_since(t0);
  EXPECT_EQ(e["kind"], "hang");
  EXPECT_GE(seconds, 2.0);
  EXPECT_LT(seconds, 60.0);
}

TEST_F(BackendIsolation, AnErrorStatusIsAnErrorVerdictWithTheBackendsMessage) {
  const json e = expect_error("failing_op", "--bisect", "failed");
  EXPECT_EQ(e["kind"], "status");
  EXPECT_TRUE(contains(e["message"].get<std::string>(), "out of slots")) << e;
}

TEST_F(BackendIsolation, EveryScenarioGetsItsOwnOutcomeAndJsonSaysError) {
  write("tiny.json", kTinyScenario);
  write("poison.json", kPoisonScenario);
  CliRun r = kvcheck("run tiny.json poison.json --json --out out --backend " +
                     test_plugin("crash"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json docs = run_results(r);
  ASSERT_EQ(docs.size(), 2u) << r.out;
  for (const auto& d : docs) {
    EXPECT_EQ(d["verdict"], "error");
    EXPECT_EQ(d["error"]["kind"], "crash");
  }
  EXPECT_EQ(files_under("out").size(), 2u);
}

TEST_F(BackendIsolation, AHealthyBackendRunsAsBeforeAlsoWithBackendSync) {
  write("poison.json", kPoisonScenario);
  CliRun plain = kvcheck("run poison.json --out a --regression new-blocks-not-zeroed --expect "
                         "corrupt --backend " + kHostPlugin);
  CliRun synced = kvcheck("run poison.json --out b --regression new-blocks-not-zeroed --expect "
                          "corrupt --backend-sync --backend-timeout 60 --backend " + kHostPlugin);
  CliRun builtin =
      kvcheck("run poison.json --out c --regression new-blocks-not-zeroed --expect corrupt");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(synced.exit_code, 0) << synced.err;
  ASSERT_EQ(builtin.exit_code, 0) << builtin.err;
  const json a = json::parse(read_file(dir_ / "a/poison.host.json"));
  const json b = json::parse(read_file(dir_ / "b/poison.host.json"));
  const json c = json::parse(read_file(dir_ / "c/poison.json"));
  for (const json* d : {&a, &b}) {
    EXPECT_EQ((*d)["verdict"], c["verdict"]);
    EXPECT_EQ((*d)["first_failure"], c["first_failure"]);
    EXPECT_FALSE(d->contains("error"));
    EXPECT_GT((*d)["backend"]["backend_calls"].get<int64_t>(), 0);
  }
  EXPECT_TRUE(contains(plain.out, "verdict: corrupt (expected corrupt) — OK")) << plain.out;
}

TEST_F(BackendIsolation, TheTimeoutMustBePositive) {
  write("tiny.json", kTinyScenario);
  EXPECT_EQ(kvcheck("run tiny.json --backend-timeout 0 --backend " + kHostPlugin).exit_code, 2);
  EXPECT_EQ(kvcheck("run tiny.json --backend-timeout 0").exit_code, 2);
}

}  // namespace
}  // namespace kv::test
