// backend_conventions_test.cpp — the engine adapts to what a backend declares (BackendDevice):
// q/out in its io dtype (bf16), lse in its base (2) with its empty-row value (+inf) wherever a
// backend op and a built-in op hand an lse to each other, graph-padded rows as its padding
// contract says (seq_len 1, block -1). The test plugin (tests/plugins/conventions_backend.cpp)
// keeps those conventions: over the default suite, in every placement of the lse-sharing ops, it
// meets every expectation — the regressions are still caught, so the bridging hides no poison.
// Its lying twin declares base 2 and hands out natural logs: caught, naming the ops.
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

// The default suite: smoke, the seeds, the regressions.
std::string default_suite() {
  const fs::path root = fs::path(KVCHECK_SOURCE_DIR) / "scenarios";
  std::vector<std::string> files{(root / "smoke.json").string()};
  for (const char* dir : {"seeds", "regressions"})
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::string list;
  for (const auto& f : files) list += " " + f;
  return list;
}

std::string conventions_plugin(const std::string& variant) {
  return std::string(KVCHECK_TEST_PLUGIN_DIR) + "/libkvtest_" + variant + ".so";
}

class BackendConventions : public CliTest {};

// The whole default suite with every op on the plugin; with merge_states or varlen_attention
// pinned built-in (the bridge between the two then runs inside the engine), the scenarios that
// call them: smoke and seeds 001-004 (seed 000's MLA and linear layers call neither, and are most
// of the suite's time).
std::string pinned_suite() {
  const fs::path root = fs::path(KVCHECK_SOURCE_DIR) / "scenarios";
  std::string list = " " + (root / "smoke.json").string();
  for (const auto& e : fs::directory_iterator(root / "seeds"))
    if (e.path().extension() == ".json" && e.path().filename().string().rfind("000-", 0) != 0)
      list += " " + e.path().string();
  return list;
}

TEST_F(BackendConventions, DeclaredConventionsAreBridgedInEveryPlacement) {
  for (const std::string pin : {"", "--backend-op merge_states=builtin",
                                "--backend-op varlen_attention=builtin"}) {
    fs::remove_all(dir_ / "out");
    const std::string suite = pin.empty() ? default_suite() : pinned_suite();
    CliRun r = kvcheck("run" + suite + " -q --out out " + pin + " --backend " +
                       conventions_plugin("conventions"));
    EXPECT_EQ(r.exit_code, 0) << pin << "\n" << r.out << r.err;
    const json smoke = json::parse(read_file(dir_ / "out/smoke.kvtest_conventions.json"));
    const std::string notes = smoke["backend"]["notes"].dump();
    EXPECT_TRUE(contains(notes, "q and out converted between f32 and bf16")) << notes;
    if (!pin.empty()) {
      EXPECT_TRUE(contains(notes, "engine: lse converted (base 2, empty rows +inf")) << notes;
    }
    // smoke.json pads graph rows: they follow the backend's padding contract.
    EXPECT_TRUE(contains(notes, "seq_len 1 and block id -1")) << notes;
  }
}

TEST_F(BackendConventions, AnLseInAnotherBaseThanDeclaredIsCaughtAtTheMerge) {
  const std::string smoke_file = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/smoke.json";
  CliRun r = kvcheck("run " + smoke_file + " --out out --backend " +
                     conventions_plugin("conventions_lie"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json smoke = json::parse(read_file(dir_ / "out/smoke.kvtest_conventions_lie.json"));
  EXPECT_EQ(smoke["verdict"], "corrupt");
  const std::string ops = smoke["first_failure"]["ops"].dump();
  EXPECT_TRUE(contains(ops, "merge_states")) << ops;
  EXPECT_TRUE(contains(ops, "varlen_attention")) << ops;
  // No regression is on and a backend is loaded: the hint narrows to an op, not --expect corrupt.
  const std::string lead = "hint: to find the backend op at fault, rerun with --backend-op "
                           "OP=builtin for the ops behind the failing site that the backend ran (";
  const size_t at = r.err.find(lead);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_FALSE(contains(r.err, "--expect corrupt")) << r.err;
  // It names exactly the site's ops that the backend ran, in the site's order (not, say, the
  // engine's linear layers, nor an op the backend left to the built-in device).
  std::string expected;
  for (const auto& op : smoke["first_failure"]["ops"])
    for (const auto& row : smoke["backend"]["ops"])
      if (row["op"] == op && row["backend_calls"].get<int64_t>() > 0)
        expected += (expected.empty() ? "" : ", ") + op.get<std::string>();
  ASSERT_FALSE(expected.empty());
  const size_t from = at + lead.size();
  EXPECT_EQ(r.err.substr(from, r.err.find(')', from) - from), expected) << r.err;
}

}  // namespace
}  // namespace kv::test
