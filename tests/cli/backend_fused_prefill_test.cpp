// backend_fused_prefill_test.cpp — a backend with the fused paged_prefill: the engine calls it
// for the prefill rows instead of its gather -> varlen -> merge chain (those ops then read
// "unused"), the result says so, and since the test plugin composes the same host ops over the
// paged cache, every scenario of the suite (regressions off) gives exactly the figures of the
// unfused chain. The chain's own regressions have no effect there, and the result says that too.
#include <filesystem>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

std::string suite() {
  const fs::path root = fs::path(KVCHECK_SOURCE_DIR) / "scenarios";
  std::string list = " " + (root / "smoke.json").string();
  for (const char* dir : {"seeds", "regressions"})
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".json") list += " " + e.path().string();
  return list;
}

const std::string kFused = std::string(KVCHECK_TEST_PLUGIN_DIR) + "/libkvtest_fused.so";

class FusedPrefill : public CliTest {};

TEST_F(FusedPrefill, ReplacesTheChainAndGivesTheChainsFigures) {
  CliRun fused = kvcheck("run" + suite() + " --no-regressions --expect clean -q --out fused "
                         "--backend " + kFused);
  ASSERT_EQ(fused.exit_code, 0) << fused.out << fused.err;
  CliRun chain = kvcheck("run" + suite() + " --no-regressions --expect clean -q --out chain "
                         "--backend " + kHostPlugin);
  ASSERT_EQ(chain.exit_code, 0) << chain.err;
  int compared = 0;
  // Each result is named after its scenario file and backend: <path>.kvtest_fused.json and
  // <path>.host.json.
  for (const std::string& name : files_under("fused")) {
    ASSERT_TRUE(name.ends_with(".kvtest_fused.json")) << name;
    const std::string chain_name = name.substr(0, name.size() - 18) + ".host.json";
    const json f = json::parse(read_file(dir_ / "fused" / name));
    const json c = json::parse(read_file(dir_ / "chain" / chain_name));
    std::map<std::string, json> ops;
    for (const auto& op : f["backend"]["ops"]) ops[op["op"]] = op;
    EXPECT_GT(ops["paged_prefill"]["backend_calls"].get<int64_t>(), 0) << name;
    EXPECT_EQ(ops["paged_prefill"]["placement"], "backend") << name;
    for (const char* op : {"gather_kv", "varlen_attention", "merge_states"})
      EXPECT_EQ(ops[op]["placement"], "unused") << name << " " << op;
    ASSERT_EQ(f["epochs"].size(), c["epochs"].size()) << name;
    for (size_t e = 0; e < f["epochs"].size(); ++e)
      for (const char* k : {"max_rel_error", "clean_requests", "nonfinite_outputs", "tokens"})
        EXPECT_EQ(f["epochs"][e][k], c["epochs"][e][k]) << name << " epoch " << e << " " << k;
    ++compared;
  }
  EXPECT_EQ(compared, 15);  // smoke, 5 seeds, 9 regression scenarios
}

TEST_F(FusedPrefill, TheChainsRegressionsSayTheyHaveNoEffect) {
  const std::string merge = std::string(KVCHECK_SOURCE_DIR) +
                            "/scenarios/regressions/merge-ignores-context-count.json";
  CliRun r = kvcheck("run " + merge + " --expect clean --out out --backend " + kFused);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path result = dir_ / "out/merge-ignores-context-count.kvtest_fused.json";
  const json b = json::parse(read_file(result))["backend"];
  EXPECT_TRUE(contains(b["notes"].dump(), "regression merge-ignores-context-count has no effect"))
      << b["notes"];
  // The coverage gap says so too, and the hint of a run that expected the corruption.
  const json gaps =
      json::parse(read_file(result))["coverage_gaps"];
  ASSERT_EQ(gaps.size(), 1u) << gaps;
  EXPECT_EQ(gaps[0]["mechanism"], "backend.paged_prefill");
  CliRun expected = kvcheck("run " + merge + " --out out --backend " + kFused);
  EXPECT_EQ(expected.exit_code, 1) << expected.out << expected.err;
  EXPECT_TRUE(contains(expected.err, "hint: regression merge-ignores-context-count needs the "
                                     "engine's gather_kv -> varlen_attention -> merge_states"))
      << expected.err;
}

}  // namespace
}  // namespace kv::test
