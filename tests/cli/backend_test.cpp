// backend_test.cpp — `kvcheck run --backend` and `kvcheck list --backend` end to end on the host:
// a plugin that cannot be loaded or cannot judge the scenario is "cannot run" (exit 3, 125 under
// --bisect) with a message naming the backend and what is wrong, and no result file; an op that
// returns an error status is a failure of the backend (exit 1); the built-in host ops behind the
// ABI run a scenario and the result says where every op ran.
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

class BackendCommand : public CliTest {
 protected:
  // A run of tiny.json with `args` that must not run: exit 3, `message` on stderr, no result.
  void expect_cannot_run(const std::string& args, const std::string& message) {
    CliRun r = kvcheck("run tiny.json " + args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, message)) << r.err;
    EXPECT_TRUE(files_under("results/runs").empty());
  }
};

TEST_F(BackendCommand, ALibraryThatCannotBeLoadedIsCannotRun) {
  write("tiny.json", kTinyScenario);
  write("not-a-library.so", "hello");
  expect_cannot_run("--backend missing.so", "backend missing.so: no such file");
  expect_cannot_run("--backend not-a-library.so", "cannot be loaded as a shared library");
  expect_cannot_run("--backend " + test_plugin("no_entry"),
                    "does not export kvcheck_backend_init");
  expect_cannot_run("--backend " + test_plugin("refuses"),
                    "refused to start: needs a GPU with 200 GB");
  expect_cannot_run("--backend " + test_plugin("future_abi"),
                    "its table says ABI version 2; this kvcheck speaks version 1");
  CliRun bisect = kvcheck("run tiny.json --bisect --backend missing.so");
  EXPECT_EQ(bisect.exit_code, 125) << bisect.err;
}

TEST_F(BackendCommand, CapsThatCannotTakeTheScenarioNameTheOpAndTheCapability) {
  write("tiny.json", kTinyScenario);
  expect_cannot_run("--backend " + test_plugin("fp8_only"),
                    "it implements paged_decode, but cache dtype bf16 is not among the "
                    "backend's: fp8_e4m3 (attention layers)");
  // Falling back leaves the backend nothing to run: that is no pass either.
  expect_cannot_run("--allow-fallback --backend " + test_plugin("fp8_only"),
                    "ran none of scenario tiny's");
}

TEST_F(BackendCommand, AnOpThatReturnsAnErrorIsAFailureOfTheBackend) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --backend " + test_plugin("failing_op"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "backend op write_kv failed: out of slots")) << r.err;
}

TEST_F(BackendCommand, TheBuiltinHostOpsAsAPluginRunAndTheResultSaysWhereEachOpRan) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --out out --backend " + kHostPlugin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "backend: builtin-host")) << r.out;
  const json doc = json::parse(read_file(dir_ / "out/tiny.host.json"));
  EXPECT_EQ(doc["device_info"]["kind"], "host") << "the backend's device says its built-in one's";
  const json b = doc["backend"];
  EXPECT_EQ(b["name"], "builtin-host");
  EXPECT_EQ(b["abi_version"], 1);
  EXPECT_EQ(b["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(b["backend_calls"].get<int64_t>(), 0);
  EXPECT_EQ(b["backend_calls"], b["total_calls"]);  // it implements every op this engine calls
  for (const auto& op : b["ops"]) {
    if (op["op"] == "paged_decode") {
      EXPECT_EQ(op["placement"], "backend");
    }
  }

  // Pinning one op back to the built-in device: it runs there, the rest on the backend.
  CliRun pinned =
      kvcheck("run tiny.json --out pinned --backend-op paged_decode=builtin --backend " +
              kHostPlugin);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  const json p = json::parse(read_file(dir_ / "pinned/tiny.host.json"))["backend"];
  for (const auto& op : p["ops"]) {
    if (op["op"] != "paged_decode") continue;
    EXPECT_EQ(op["placement"], "builtin");
    EXPECT_EQ(op["backend_calls"], 0);
    EXPECT_GT(op["builtin_calls"].get<int64_t>(), 0);
  }
  EXPECT_TRUE(contains(p["notes"].dump(), "--backend-op paged_decode=builtin")) << p["notes"];
}

// Per layer kind, the result says how many op calls the backend ran of how many: an op pinned to
// the built-in device leaves the layers that use it partly (or wholly) unjudged, and says so.
TEST_F(BackendCommand, TheResultCountsTheBackendsCallsPerLayerKind) {
  const std::string seed = std::string(KVCHECK_SOURCE_DIR) +
                           "/scenarios/seeds/000-mla-linear-hybrid-not-zeroed.json";
  CliRun r = kvcheck("run " + seed + " --no-regressions --expect clean --out out "
                     "--backend-op linear_attention=builtin --backend " + kHostPlugin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json b = json::parse(read_file(dir_ / "out/000-mla-linear-hybrid-not-zeroed.host.json"))
                     ["backend"];
  std::map<std::string, std::pair<int64_t, int64_t>> kinds;  // kind: (backend, total)
  int64_t total = 0;
  for (const auto& k : b["layer_kinds"]) {
    kinds[k["layer_kind"]] = {k["backend_calls"], k["total_calls"]};
    total += k["total_calls"].get<int64_t>();
  }
  ASSERT_EQ(kinds.size(), 2u) << b["layer_kinds"];  // mla and linear, no attention layers
  EXPECT_GT(kinds["mla"].second, 0);
  EXPECT_EQ(kinds["mla"].first, kinds["mla"].second);  // every mla op on the backend
  // The linear layers: their recurrence pinned built-in; only their zeroing fills on the backend.
  EXPECT_LT(kinds["linear"].first, kinds["linear"].second);
  EXPECT_EQ(total, b["total_calls"].get<int64_t>());
  EXPECT_TRUE(contains(r.out, "(mla " + std::to_string(kinds["mla"].first) + "/")) << r.out;
}

// A scenario can name its backend: the library relative to the scenario file, its pinned ops.
// The command line wins: --backend replaces it, --no-backend ignores it. In one run, scenarios
// with and without a backend each get their own.
TEST_F(BackendCommand, AScenarioNamesItsBackendAndTheCommandLineWins) {
  const std::string rel =
      fs::relative(kHostPlugin, (dir_ / "sub").string()).string();  // from the scenario's folder
  fs::create_directories(dir_ / "sub");
  std::string with = kTinyScenario;
  with.insert(with.rfind('}'), ", \"backend\": {\"library\": \"" + rel +
                                   "\", \"builtin_ops\": [\"merge_states\"]}");
  write("sub/named.json", with);
  write("tiny.json", kTinyScenario);

  CliRun r = kvcheck("run sub/named.json tiny.json --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each its own result file, named after the file and the backend it ran with (none here).
  EXPECT_TRUE(fs::exists(dir_ / "out/sub/named.host.json"));
  const json named = json::parse(read_file(dir_ / "out/tiny.json"));  // the one without
  EXPECT_TRUE(contains(r.out, "backend: builtin-host")) << r.out;
  CliRun one = kvcheck("run sub/named.json --out one");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const json b = json::parse(read_file(dir_ / "one/named.host.json"))["backend"];
  EXPECT_EQ(b["name"], "builtin-host");
  for (const auto& op : b["ops"]) {
    if (op["op"] == "merge_states") {
      EXPECT_EQ(op["placement"], "builtin") << op;
    }
  }
  // The second scenario of the mixed run had no backend: its result has no backend block.
  EXPECT_FALSE(named.contains("backend") && !named["backend"].is_null()) << named["backend"];

  CliRun none = kvcheck("run sub/named.json --no-backend --out none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_FALSE(contains(none.out, "backend:")) << none.out;

  // --backend replaces the scenario's: a crashing plugin on the command line is what runs.
  CliRun replaced = kvcheck("run sub/named.json --out rep --backend " + test_plugin("crash"));
  EXPECT_EQ(replaced.exit_code, 1) << replaced.err;
  EXPECT_TRUE(contains(replaced.err, "--backend")) << replaced.err;

  // A scenario naming a library that is not there cannot run, and says which file.
  std::string missing = kTinyScenario;
  missing.insert(missing.rfind('}'), ", \"backend\": {\"library\": \"nowhere.so\"}");
  write("missing.json", missing);
  CliRun gone = kvcheck("run missing.json --out gone");
  EXPECT_EQ(gone.exit_code, 3) << gone.err;
  EXPECT_TRUE(contains(gone.err, "nowhere.so")) << gone.err;
  EXPECT_EQ(kvcheck("run missing.json --no-backend --backend " + kHostPlugin).exit_code, 2);
}

TEST_F(BackendCommand, BackendOptionsAreCheckedAsUsage) {
  write("tiny.json", kTinyScenario);
  CliRun bad_op =
      kvcheck("run tiny.json --backend-op paged_decod=builtin --backend " + kHostPlugin);
  EXPECT_EQ(bad_op.exit_code, 2) << bad_op.err;
  EXPECT_TRUE(contains(bad_op.err, "did you mean \"paged_decode\"")) << bad_op.err;
  CliRun bad_side =
      kvcheck("run tiny.json --backend-op paged_decode=backend --backend " + kHostPlugin);
  EXPECT_EQ(bad_side.exit_code, 2) << bad_side.err;
  CliRun alone = kvcheck("run tiny.json --allow-fallback");
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
}

TEST_F(BackendCommand, ListDescribesAPlugin) {
  CliRun r = kvcheck("list --backend " + kHostPlugin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"backend builtin-host", "ABI version 1", "sha256:", "lse_base",
                           "paged_decode         backend", "paged_prefill        built-in"})
    EXPECT_TRUE(contains(r.out, part)) << part << " missing from:\n" << r.out;
  CliRun j = kvcheck("list --json --backend " + kHostPlugin);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["backend"]["caps"]["io_dtype"], "f32");
  CliRun missing = kvcheck("list --backend missing.so");
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
}

}  // namespace
}  // namespace kv::test
