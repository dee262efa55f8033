// run_schema_test.cpp — the committed run schema is the generated one, its summary has exactly
// the fields to_json(RunSummary) and to_json(BaselineComparison) write (and exit_code), and its
// results refer to the result schema beside it.
#include "report/run_schema.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/baseline.h"
#include "report/result_schema.h"
#include "report/run_summary.h"
#include "tests/report/schema_test_support.h"

namespace kv {
namespace {

TEST(RunSchema, CommittedFileIsTheGeneratedOne) {
  EXPECT_EQ(committed_schema("run.schema.json"), run_schema_text())
      << "scenarios/schema/run.schema.json is stale; regenerate it with "
         "`build/kvcheck schema run > scenarios/schema/run.schema.json`";
}

TEST(RunSchema, TheSummaryHasTheFieldsTheRunWrites) {
  const auto doc = nlohmann::json::parse(run_schema_text());
  EXPECT_EQ(doc["properties"]["schema"]["const"], kRunSchema);
  EXPECT_EQ(keys_of(doc["properties"]), (std::vector<std::string>{"results", "schema", "summary"}));
  const auto& summary = doc["properties"]["summary"];
  RunSummary s;
  s.add(ScenarioOutcome::failed, "FAILED x (x.json, seed 1): verdict corrupt, expected clean");
  nlohmann::json written = to_json(s);
  written["baseline"] = to_json(BaselineComparison{});
  written["exit_code"] = 1;
  EXPECT_EQ(keys_of(summary["properties"]), keys_of(written));
  // Everything but the baseline block (only under --baseline) is always there.
  EXPECT_EQ(summary["required"].size(), written.size() - 1);
  EXPECT_EQ(std::count(summary["required"].begin(), summary["required"].end(), "baseline"), 0);
  EXPECT_EQ(keys_of(summary["properties"]["baseline"]["properties"]), keys_of(written["baseline"]));
}

// "result.schema.json" resolves against the run schema's $id to the result schema's $id, so a
// validator holding both (scripts/validate-scenarios.py) finds it.
TEST(RunSchema, ResultsReferToTheResultSchemaBesideIt) {
  const auto run = nlohmann::json::parse(run_schema_text());
  const auto result = nlohmann::json::parse(result_schema_text());
  const auto& items = run["properties"]["results"]["items"];
  ASSERT_EQ(items, (nlohmann::json{{"$ref", "result.schema.json"}}));
  std::string id = run["$id"];
  id.replace(id.rfind('/') + 1, std::string::npos, "result.schema.json");
  EXPECT_EQ(id, result["$id"]);
}

}  // namespace
}  // namespace kv
