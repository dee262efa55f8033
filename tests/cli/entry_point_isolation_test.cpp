// entry_point_isolation_test.cpp — every entry point that loads a plugin (`conform`, `list
// --backend`, `run --backend`) runs it in a worker process (cli/plugin_worker.h): a plugin that
// exits (status 0 included), crashes or hangs in an op is that op's failure (exit 1, never a
// silent pass); one that does so while loading (its library constructor or its init) cannot be
// loaded (exit 3, 125 under --bisect). The faults come from tests/plugins/fatal_backend.cpp
// (kvcheck's host ops with a fault where --backend-option says) and misbehaving.c's ctor_exit0.
// Also the options of these entry points that must be refused (exit 2, naming the option).
#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

const std::string kFatal = std::string(KVCHECK_TEST_PLUGIN_DIR) + "/libkvtest_fatal.so";

const char* kLoadFailure = "(dlopen runs the library's constructors, then kvcheck_backend_init)";

class EntryPoints : public CliTest {
 protected:
  CliRun conform(const std::string& option, const std::string& args = "") {
    return kvcheck("conform --backend " + kFatal + " --backend-option '" + option + "' " + args);
  }
  // The row of `op` in conform's JSON document (fails the test when there is none).
  static json op_row(const json& doc, const std::string& op) {
    for (const auto& o : doc["ops"])
      if (o["op"] == op) return o;
    ADD_FAILURE() << "no row for " << op << " in " << doc.dump();
    return json::object();
  }
};

// ---- conform -----------------------------------------------------------------------------------

TEST_F(EntryPoints, ConformWithoutAFaultPasses) {  // the fault plugin itself is sound
  const CliRun r = conform("", "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["passed"], true);
  EXPECT_EQ(doc["seed"], 1);
  EXPECT_EQ(op_row(doc, "gather_kv")["ok"], true);
}

TEST_F(EntryPoints, ConformExit0InAnOpFailsThatOpAndJudgesTheOthers) {
  const CliRun r = conform("write_kv=exit0", "--json");
  ASSERT_EQ(r.exit_code, 1) << r.err;  // never the silent exit 0 of the plugin's exit(0)
  const json doc = json::parse(r.out);  // --json always prints a document
  EXPECT_EQ(doc["passed"], false);
  const json w = op_row(doc, "write_kv");
  EXPECT_EQ(w["ok"], false);
  EXPECT_NE(w["first_failure"].get<std::string>().find("exited the process (exit code 0)"),
            std::string::npos)
      << w;
  // The ops after it ran in a new worker and pass.
  for (const char* op : {"paged_decode", "gather_kv", "varlen_attention", "merge_states"}) {
    const json o = op_row(doc, op);
    EXPECT_EQ(o["ok"], true) << o;
    EXPECT_GT(o["cases"].get<int>(), 1) << o;
  }
  EXPECT_TRUE(contains(r.err, "backend op write_kv exited the process (exit code 0)")) << r.err;
}

TEST_F(EntryPoints, ConformCrashAndAbortAndExitEachFailTheirOp) {
  const CliRun r = conform("write_kv=crash,gather_kv=exit3,varlen_attention=abort");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "write_kv               1       0        inf  during its cases: "
                              "the backend crashed (SIGSEGV)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "the backend exited the process (exit code 3)")) << r.out;
  EXPECT_TRUE(contains(r.out, "the backend crashed (SIGABRT)")) << r.out;
  EXPECT_TRUE(contains(r.out, "verdict: 3 op(s) do not conform")) << r.out;
}

TEST_F(EntryPoints, ConformHangIsKilledAfterTheTimeout) {
  const CliRun r = conform("merge_states=hang", "--backend-timeout 1 --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json m = op_row(json::parse(r.out), "merge_states");
  EXPECT_EQ(m["ok"], false);
  EXPECT_NE(m["first_failure"].get<std::string>().find("did not return within 1 s"),
            std::string::npos)
      << m;
}

TEST_F(EntryPoints, ConformLoadFailuresCannotRun) {
  for (const std::string fault : {"init=exit0", "init=crash", "init=abort"}) {
    const CliRun r = conform(fault, "--json");
    EXPECT_EQ(r.exit_code, 3) << fault << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << fault << ": " << r.out;
    EXPECT_TRUE(contains(r.err, kLoadFailure)) << fault << ": " << r.err;
  }
  const CliRun hang = conform("init=hang", "--backend-timeout 1 --bisect");
  EXPECT_EQ(hang.exit_code, 125) << hang.err;
  EXPECT_TRUE(contains(hang.err, "loading it did not return within 1 s")) << hang.err;
  const CliRun ctor = kvcheck("conform --json --backend " + test_plugin("ctor_exit0"));
  EXPECT_EQ(ctor.exit_code, 3) << ctor.err;
  EXPECT_TRUE(contains(ctor.err, "loading it exited the process (exit code 0)")) << ctor.err;
}

TEST_F(EntryPoints, ConformDestroyThatCrashesIsAFailure) {
  const CliRun r = conform("destroy=crash", "--json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "destroy crashed (SIGSEGV)")) << r.err;
}

// ---- list --backend ----------------------------------------------------------------------------

TEST_F(EntryPoints, ListBackendDescribesItFromAWorker) {
  const CliRun r = kvcheck("list --json --backend " + kFatal);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["backend"]["name"], "fatal");
}

TEST_F(EntryPoints, ListBackendLoadFailuresCannotRun) {
  const CliRun ctor = kvcheck("list --backend " + test_plugin("ctor_exit0"));
  EXPECT_EQ(ctor.exit_code, 3) << ctor.err;  // was a silent exit 0
  EXPECT_TRUE(ctor.out.empty()) << ctor.out;
  EXPECT_TRUE(contains(ctor.err, "loading it exited the process (exit code 0)")) << ctor.err;
  const CliRun crash = kvcheck("list --backend " + kFatal + " --backend-option init=crash");
  EXPECT_EQ(crash.exit_code, 3) << crash.err;
  EXPECT_TRUE(contains(crash.err, "loading it crashed (SIGSEGV)")) << crash.err;
  const CliRun hang =
      kvcheck("list --backend " + kFatal + " --backend-option init=hang --backend-timeout 1");
  EXPECT_EQ(hang.exit_code, 3) << hang.err;
  EXPECT_TRUE(contains(hang.err, "loading it did not return within 1 s")) << hang.err;
}

// ---- run --backend: loading is "cannot run" there too ------------------------------------------

TEST_F(EntryPoints, RunLoadFailuresCannotRun) {
  write("tiny.json", kTinyScenario);
  const CliRun crash =
      kvcheck("run tiny.json --out out --backend " + kFatal + " --backend-option init=crash");
  EXPECT_EQ(crash.exit_code, 3) << crash.err;
  EXPECT_TRUE(contains(crash.err, "loading it crashed (SIGSEGV)")) << crash.err;
  EXPECT_TRUE(files_under("out").empty());
  const CliRun ctor =
      kvcheck("run tiny.json --out out --bisect --backend " + test_plugin("ctor_exit0"));
  EXPECT_EQ(ctor.exit_code, 125) << ctor.err;
  EXPECT_TRUE(contains(ctor.err, "loading it exited the process (exit code 0)")) << ctor.err;
}

TEST_F(EntryPoints, RunOpFaultIsStillAnErrorVerdict) {
  write("tiny.json", kTinyScenario);
  const CliRun r =
      kvcheck("run tiny.json --out out --backend " + kFatal + " --backend-option write_kv=exit0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "backend op write_kv exited the process (exit code 0)")) << r.err;
}

TEST_F(EntryPoints, RunDestroyThatCrashesOrHangsIsAnErrorVerdict) {
  write("tiny.json", kTinyScenario);
  const CliRun crash =
      kvcheck("run tiny.json --out out --backend " + kFatal + " --backend-option destroy=crash");
  EXPECT_EQ(crash.exit_code, 1) << crash.err;
  EXPECT_TRUE(contains(crash.err, "backend op destroy crashed (SIGSEGV)")) << crash.err;
  const json e = json::parse(read_file(dir_ / "out/tiny.kvtest_fatal.json"))["error"];
  EXPECT_EQ(e["op"], "destroy");
  EXPECT_EQ(e["layer"], -1) << "destroy runs outside every layer: " << e;
  EXPECT_TRUE(e["layer_kind"].is_null()) << e;
  const CliRun hang = kvcheck("run tiny.json --out out --backend-timeout 1 --backend " + kFatal +
                              " --backend-option destroy=hang");
  EXPECT_EQ(hang.exit_code, 1) << hang.err;  // never a worker that hangs forever
  EXPECT_TRUE(contains(hang.err, "backend op destroy did not return within 1 s")) << hang.err;
}

// ---- options refused -----------------------------------------------------------------------------

TEST_F(EntryPoints, EmptyPathsAndOutOfRangeValuesAreUsageErrors) {
  write("tiny.json", kTinyScenario);
  const std::pair<std::string, std::string> cases[] = {
      {"run tiny.json --backend ''", "--backend: expected a path, got ''"},
      {"run tiny.json --out ''", "--out: expected a path, got ''"},
      {"conform --backend ''", "--backend: expected a path, got ''"},
      {"list --backend ''", "--backend: expected a path, got ''"},
      {"conform --backend " + kFatal + " --seed -1", "--seed: expected an integer from 0 to"},
      {"conform --backend " + kFatal + " --seed 18446744073709551616",
       "got 18446744073709551616"},
      {"conform --backend " + kFatal + " --tolerance nan",
       "--tolerance: expected a finite number above 0"},
      {"conform --backend " + kFatal + " --tolerance inf", "expected a finite number above 0"},
      {"conform --backend " + kFatal + " --tolerance 0", "expected a finite number above 0"},
      {"conform --backend " + kFatal + " --tolerance -1e-5", "expected a finite number above 0"},
  };
  for (const auto& [args, message] : cases) {
    const CliRun r = kvcheck(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_TRUE(contains(r.err, message)) << args << ": " << r.err;
    EXPECT_LT(r.err.size(), 400u) << args << ": one short message, no 309-digit range";
  }
  EXPECT_FALSE(fs::exists(dir_ / "results")) << "nothing ran";
}

TEST_F(EntryPoints, ConformRecordsItsSeed) {
  const CliRun r = conform("", "--seed 18446744073709551615 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["seed"].get<uint64_t>(), 18446744073709551615ull);
  const CliRun text = conform("", "--seed 7");
  EXPECT_TRUE(contains(text.out, "seed: 7")) << text.out;
}

}  // namespace
}  // namespace kv::test
