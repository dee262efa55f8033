// coverage_test.cpp — the result's coverage and coverage gaps end to end: a regression scenario
// shrunk so that it cannot reach its mechanism comes out clean, and the warning's hint and the
// result's coverage_gaps name what it did not exercise; the regression scenarios as written
// report their mechanism exercised and no gap.
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;
using Coverage = CliTest;

const std::string kRegressions = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/regressions/";

// One epoch of new-blocks-not-zeroed runs on fresh blocks only: the bug cannot show.
TEST_F(Coverage, OneEpochOfNewBlocksNotZeroedIsCleanAndTheHintSaysThePoolNeverTurnedOver) {
  CliRun r = kvcheck("run '" + kRegressions + "new-blocks-not-zeroed.json' --epochs 1 --out out");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: clean (expected corrupt) — MISMATCH")) << r.out;
  EXPECT_TRUE(contains(r.err, "hint: regression new-blocks-not-zeroed needs recycled blocks, but "
                              "the pool never turned over ("))
      << r.err;
  EXPECT_TRUE(contains(r.out, "coverage:")) << r.out;
  json doc = json::parse(read_file(dir_ / "out/new-blocks-not-zeroed.json"));
  EXPECT_EQ(doc["coverage"]["blocks_recycled"], 0);
  EXPECT_EQ(doc["coverage"]["usable_blocks"], 129);
  EXPECT_LE(doc["coverage"]["pool_turnovers"].get<double>(), 1.0);
  ASSERT_EQ(doc["coverage_gaps"].size(), 1u) << doc["coverage_gaps"];
  EXPECT_EQ(doc["coverage_gaps"][0]["regression"], "new-blocks-not-zeroed");
  EXPECT_EQ(doc["coverage_gaps"][0]["mechanism"], "blocks_recycled");
  EXPECT_TRUE(contains(doc["coverage_gaps"][0]["message"].get<std::string>(),
                       "of 129 usable blocks handed out, none twice"))
      << doc["coverage_gaps"][0];

  CliRun full = kvcheck("run '" + kRegressions + "new-blocks-not-zeroed.json' --out out");
  EXPECT_EQ(full.exit_code, 0) << full.out << full.err;
  json caught = json::parse(read_file(dir_ / "out/new-blocks-not-zeroed.json"));
  EXPECT_GT(caught["coverage"]["blocks_recycled"].get<int64_t>(), 0);
  EXPECT_GT(caught["coverage"]["pool_turnovers"].get<double>(), 1.0);
  EXPECT_EQ(caught["coverage_gaps"], json::array());
}

// Graph replays at exactly their capture size pad nothing: padded-rows-in-reduction stays hidden.
TEST_F(Coverage, ReplaysWithoutPaddedRowsLeavePaddedRowsInReductionClean) {
  std::string text = read_file(kRegressions + "padded-rows-in-reduction.json");
  const std::string sizes = "\"capture_sizes\": [\n        2,\n        4,\n        8\n      ]";
  ASSERT_NE(text.find(sizes), std::string::npos);
  text.replace(text.find(sizes), sizes.size(), "\"capture_sizes\": [1, 2, 3, 4, 5, 6, 7, 8]");
  write("unpadded.json", text);
  CliRun r = kvcheck("run unpadded.json --out out");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "hint: regression padded-rows-in-reduction needs graph replays "
                              "with padded rows, but each of the "))
      << r.err;
  json doc = json::parse(read_file(dir_ / "out/unpadded.json"));
  EXPECT_EQ(doc["verdict"], "clean");
  EXPECT_GT(doc["coverage"]["graph_replays"].get<int64_t>(), 0);
  EXPECT_EQ(doc["coverage"]["padded_rows_replayed"], 0);
  ASSERT_EQ(doc["coverage_gaps"].size(), 1u) << doc["coverage_gaps"];
  EXPECT_EQ(doc["coverage_gaps"][0]["mechanism"], "padded_rows_replayed");
}

// A control is clean because of a setting, not a mechanism: the gap names the field.
TEST_F(Coverage, TheBf16ControlOfGraphMetadataNamesTheCacheDtype) {
  CliRun r = kvcheck("run '" + kRegressions +
                     "graph-metadata-not-persistent-bf16.json' --expect corrupt --out out");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "hint: regression graph-metadata-not-persistent needs an fp8_e4m3 "
                              "cache, but the cache is bf16"))
      << r.err;
  json doc = json::parse(read_file(dir_ / "out/graph-metadata-not-persistent-bf16.json"));
  ASSERT_EQ(doc["coverage_gaps"].size(), 1u) << doc["coverage_gaps"];
  EXPECT_EQ(doc["coverage_gaps"][0]["mechanism"], "cache.dtype");
  EXPECT_GT(doc["coverage"]["replayed_multiblock_rows"].get<int64_t>(), 0)
      << "the mechanism itself was exercised";
}

// Every regression scenario as written exercises what its regression needs.
TEST_F(Coverage, RegressionScenariosExerciseTheirMechanisms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"merge-ignores-context-count", "prefill_rows_without_context"},
      {"padded-rows-in-reduction", "padded_rows_replayed"},
      {"graph-metadata-not-persistent", "replayed_multiblock_rows"},
      {"new-blocks-not-zeroed", "blocks_recycled"},
      {"gather-assumes-contiguous", "prefill_context_tokens"},
  };
  std::string files;
  for (const auto& [name, mechanism] : cases) files += " '" + kRegressions + name + ".json'";
  CliRun r = kvcheck("run" + files + " --json -q --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json docs = run_results(r);
  ASSERT_EQ(docs.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& d = docs[i];
    EXPECT_EQ(d["scenario"], cases[i].first);
    EXPECT_GT(d["coverage"][cases[i].second].get<int64_t>(), 0) << cases[i].first;
    EXPECT_EQ(d["coverage_gaps"], json::array()) << cases[i].first;
    int64_t per_epoch = 0;
    for (const json& e : d["epochs"]) per_epoch += e[cases[i].second].get<int64_t>();
    EXPECT_EQ(per_epoch, d["coverage"][cases[i].second].get<int64_t>())
        << cases[i].first << ": the run's total is the sum of its epochs";
  }
}

}  // namespace
}  // namespace kv::test
