// run_test.cpp — `kvcheck run` end to end on the host: exit codes 0/1/3/125, the result file,
// --json, and that the overrides reach the run.
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;
using RunCommand = CliTest;

// A path-selecting environment variable is checked before anything runs, with or without a GPU.
TEST_F(RunCommand, UnknownDecodePathIsBadInputNamingTheAcceptedValues) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck_env("KVCHECK_DECODE_PATH=fastest", "run tiny.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "KVCHECK_DECODE_PATH='fastest'")) << r.err;
  EXPECT_TRUE(contains(r.err, "automatic and generic")) << r.err;
  EXPECT_TRUE(files_under("results/runs").empty());
  CliRun ok = kvcheck_env("KVCHECK_DECODE_PATH=generic", "run tiny.json");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(RunCommand, CleanScenarioExits0AndWritesTheResultAtomically) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "scenario: tiny")) << r.out;
  EXPECT_TRUE(contains(r.out, "verdict: clean (expected clean) — OK")) << r.out;
  // Default folder results/runs under the working directory; only the result, no temp file.
  ASSERT_EQ(files_under("results/runs"), std::vector<std::string>{"tiny.json"});
  json doc = json::parse(read_file(dir_ / "results/runs/tiny.json"));
  EXPECT_EQ(doc["schema"], "kvcheck.result/2");
  EXPECT_EQ(doc["scenario"], "tiny");
  EXPECT_EQ(doc["device"], "host");
  EXPECT_EQ(doc["device_info"]["kind"], "host");
  EXPECT_GT(doc["device_info"]["hardware_threads"].get<int>(), 0);
  EXPECT_TRUE(doc["device_info"]["gpu"].is_null());
  EXPECT_EQ(doc["verdict"], "clean");
  EXPECT_EQ(doc["epochs"].size(), 2u);
}

TEST_F(RunCommand, ExpectedCorruptionNotFoundExits1) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --expect corrupt --out out");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: clean (expected corrupt) — MISMATCH")) << r.out;
  EXPECT_TRUE(contains(r.err, "hint:")) << r.err;
  json doc = json::parse(read_file(dir_ / "out/tiny.json"));
  EXPECT_EQ(doc["expected"], "corrupt");
  EXPECT_EQ(doc["meets_expectation"], false);
}

// One file, both sides of an A/B comparison: the regression on and off from the command line.
TEST_F(RunCommand, RegressionOnTheCommandLineCorruptsAndExpectCorruptAcceptsIt) {
  write("poison.json", kPoisonScenario);
  CliRun off = kvcheck("run poison.json --out out");
  EXPECT_EQ(off.exit_code, 0) << off.out << off.err;

  // The flag before the file: it takes one name and leaves the file to the positionals.
  CliRun on = kvcheck("run --regression new-blocks-not-zeroed poison.json --out out");
  EXPECT_EQ(on.exit_code, 1) << on.out << on.err;
  EXPECT_TRUE(contains(on.out, "first failure:")) << on.out;
  json doc = json::parse(read_file(dir_ / "out/poison.json"));
  EXPECT_EQ(doc["verdict"], "corrupt");
  EXPECT_EQ(doc["regressions"], json::array({"new-blocks-not-zeroed"}));
  EXPECT_TRUE(doc["first_failure"].is_object());

  CliRun expected = kvcheck(
      "run poison.json --regression new-blocks-not-zeroed --expect corrupt --out out");
  EXPECT_EQ(expected.exit_code, 0) << expected.out << expected.err;
}

TEST_F(RunCommand, NoRegressionsReplacesTheScenarioList) {
  std::string text = kPoisonScenario;
  text.insert(text.rfind('}'), R"(, "regressions": ["new-blocks-not-zeroed"], "expect": "corrupt")");
  write("ab.json", text);
  CliRun as_written = kvcheck("run ab.json --out out");
  EXPECT_EQ(as_written.exit_code, 0) << as_written.out << as_written.err;
  CliRun off = kvcheck("run ab.json --no-regressions --expect clean --out out");
  EXPECT_EQ(off.exit_code, 0) << off.out << off.err;
  json doc = json::parse(read_file(dir_ / "out/ab.json"));  // named after the file
  EXPECT_EQ(doc["regressions"], json::array());
  EXPECT_EQ(doc["verdict"], "clean");
}

TEST_F(RunCommand, SeedAndEpochsOverridesReachTheRun) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --seed 99 --epochs 3 --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = only_result(r);
  EXPECT_EQ(doc["seed"], 99);
  EXPECT_EQ(doc["epochs"].size(), 3u);
  EXPECT_EQ(doc, json::parse(read_file(dir_ / "out/tiny.json"))) << "stdout = the result file";
}

TEST_F(RunCommand, JsonWithSeveralFilesPrintsOneDocumentOfTheirResults) {
  write("a.json", kTinyScenario);
  write("b.json", kPoisonScenario);
  CliRun r = kvcheck("run a.json b.json --json --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json docs = run_results(r);  // nothing but the one document on stdout
  ASSERT_TRUE(docs.is_array());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["scenario"], "tiny");
  EXPECT_EQ(docs[1]["scenario"], "poison");
  EXPECT_EQ(files_under("out").size(), 2u);
}

TEST_F(RunCommand, OneMismatchAmongSeveralExits1) {
  write("a.json", kTinyScenario);
  write("b.json", kPoisonScenario);
  CliRun r = kvcheck("run a.json b.json --regression new-blocks-not-zeroed --out out");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "scenario: tiny")) << "every file still runs";
  EXPECT_TRUE(contains(r.out, "scenario: poison"));
}

// Hides every GPU from the kvcheck processes a test starts, so that "no GPU" is tested on a GPU
// machine too (CUDA reads CUDA_VISIBLE_DEVICES when the runtime starts).
struct NoVisibleGpu {
  NoVisibleGpu() { setenv("CUDA_VISIBLE_DEVICES", "", 1); }
  ~NoVisibleGpu() { unsetenv("CUDA_VISIBLE_DEVICES"); }
};

TEST_F(RunCommand, CudaWithoutCudaExits3WithAHintAndWritesNothing) {
  const NoVisibleGpu hide;
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --device cuda --out out");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "--device host")) << r.err;
  EXPECT_TRUE(files_under("out").empty());
}

// A GPU gate never passes on the CPU in silence: auto says where it runs, --require-gpu refuses.
TEST_F(RunCommand, DeviceAutoSaysWhereItRunsAndRequireGpuRefusesTheHost) {
  const NoVisibleGpu hide;
  write("tiny.json", kTinyScenario);
  CliRun automatic = kvcheck("run tiny.json --device auto -q --out out");
  EXPECT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_TRUE(contains(automatic.err, "--device auto: running on the host (")) << automatic.err;
  fs::remove_all(dir_ / "out");
  for (const std::string device : {"", " --device auto", " --device cuda"}) {
    CliRun r = kvcheck("run tiny.json --require-gpu --out out" + device);
    EXPECT_EQ(r.exit_code, 3) << device << r.err;
    EXPECT_TRUE(contains(r.err, "no CUDA GPU is visible") ||
                contains(r.err, "built without CUDA")) << r.err;
    EXPECT_TRUE(files_under("out").empty());
  }
  CliRun host = kvcheck("run tiny.json --require-gpu --device host --out out");
  EXPECT_EQ(host.exit_code, 2) << host.err;
  EXPECT_TRUE(contains(host.err, "--require-gpu: --device host runs on the CPU")) << host.err;
}

TEST_F(RunCommand, BisectTurnsCannotRunInto125) {
  const NoVisibleGpu hide;
  write("tiny.json", kTinyScenario);
  EXPECT_EQ(kvcheck("run tiny.json --device cuda --bisect").exit_code, 125);
  // ...and input this commit cannot understand, but leaves the verdicts alone.
  EXPECT_EQ(kvcheck("run tiny.json --bisect").exit_code, 0);
  EXPECT_EQ(kvcheck("run tiny.json --bisect --expect corrupt").exit_code, 1);
  EXPECT_EQ(kvcheck("run tiny.json --bisect --expect sometimes").exit_code, 125);
}

TEST_F(RunCommand, UnwritableResultFolderExits3) {
  write("tiny.json", kTinyScenario);
  write("occupied", "a file where the result folder should be");
  CliRun r = kvcheck("run tiny.json --out occupied/runs");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "--out")) << r.err;
  EXPECT_EQ(kvcheck("run tiny.json --out occupied/runs --bisect").exit_code, 125);
}

}  // namespace
}  // namespace kv::test
