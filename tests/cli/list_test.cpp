// list_test.cpp — `kvcheck list` names every registered regression, op, check site and device.
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "ops/op_table.h"
#include "result/check_sites.h"
#include "scenario/regressions.h"

namespace kv::test {
namespace {

using nlohmann::json;
using ListCommand = CliTest;

TEST_F(ListCommand, NamesEveryRegressionOpAndDevice) {
  CliRun r = kvcheck("list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(all_regressions().empty());
  for (const auto& reg : all_regressions()) {
    EXPECT_TRUE(contains(r.out, std::string(reg.name))) << reg.name;
    EXPECT_TRUE(contains(r.out, std::string(reg.bug_class))) << reg.bug_class;
  }
  for (const auto& op : all_device_ops())
    EXPECT_TRUE(contains(r.out, "  " + std::string(op.name) + " ")) << op.name;
  for (const auto& site : all_check_sites()) {
    EXPECT_TRUE(contains(r.out, "  " + std::string(site.name) + " ")) << site.name;
    std::string ops;
    for (const auto& name : site_op_names(site.site)) ops += (ops.empty() ? "" : ", ") + name;
    EXPECT_TRUE(contains(r.out, "ops: " + ops)) << site.name;
  }
  EXPECT_TRUE(contains(r.out, "host")) << r.out;
  EXPECT_TRUE(contains(r.out, "cuda")) << r.out;
}

TEST_F(ListCommand, JsonMatchesTheRegistry) {
  CliRun r = kvcheck("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["schema"], "kvcheck.list/2");
  ASSERT_EQ(doc["regressions"].size(), all_regressions().size());
  for (size_t i = 0; i < all_regressions().size(); ++i) {
    EXPECT_EQ(doc["regressions"][i]["name"], std::string(all_regressions()[i].name));
    EXPECT_FALSE(doc["regressions"][i]["models"].get<std::string>().empty());
    EXPECT_FALSE(doc["regressions"][i]["bug_class"].get<std::string>().empty());
    EXPECT_EQ(doc["regressions"][i]["level"], to_string(all_regressions()[i].level));
    // What it needs the run to exercise: coverage counters of the result.
    ASSERT_EQ(doc["regressions"][i]["needs"].size(), all_regressions()[i].needs.size());
    for (size_t j = 0; j < all_regressions()[i].needs.size(); ++j)
      EXPECT_EQ(doc["regressions"][i]["needs"][j],
                std::string(mechanism_info(all_regressions()[i].needs[j]).name));
  }
  EXPECT_EQ(doc["regressions"][3]["name"], "new-blocks-not-zeroed");
  EXPECT_EQ(doc["regressions"][3]["needs"], json::array({"blocks_recycled"}));
  // The two that live in the engine's prefill chain (the merge's count, the gather's strides) are
  // marked so: a backend's fused paged_prefill takes them out of reach; the rest apply to any.
  std::vector<std::string> chain;
  for (const auto& r : doc["regressions"])
    if (r["level"] == "prefill_chain") chain.push_back(r["name"]);
  EXPECT_EQ(chain, (std::vector<std::string>{"merge-ignores-context-count",
                                             "gather-assumes-contiguous"}));
  ASSERT_EQ(doc["ops"].size(), all_device_ops().size());
  for (size_t i = 0; i < all_device_ops().size(); ++i)
    EXPECT_EQ(doc["ops"][i]["name"], std::string(all_device_ops()[i].name));
  // Every site names the ops behind it, each one an op of the table above.
  ASSERT_EQ(doc["check_sites"].size(), all_check_sites().size());
  for (const auto& site : doc["check_sites"]) {
    ASSERT_FALSE(site["ops"].empty()) << site["name"];
    for (const auto& op : site["ops"]) EXPECT_TRUE(find_device_op(op.get<std::string>())) << op;
  }
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["devices"][0]["name"], "host");
  EXPECT_EQ(doc["devices"][0]["available"], true);
  EXPECT_EQ(doc["devices"][1]["name"], "cuda");
#ifndef KVCHECK_HAVE_CUDA
  EXPECT_EQ(doc["devices"][1]["available"], false);
  EXPECT_TRUE(contains(doc["devices"][1]["note"].get<std::string>(), "not built"));
#endif
}

TEST_F(ListCommand, ScenariosListsAFoldersScenariosWithTheirExpectationAndCost) {
  fs::create_directories(dir_ / "scenarios/sub");
  write("scenarios/tiny.json", kTinyScenario);
  write("scenarios/sub/poison.json", kPoisonScenario);
  CliRun r = kvcheck("list scenarios");  // ./scenarios by default
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "scenarios/sub/poison.json")) << r.out;
  EXPECT_TRUE(contains(r.out, "scenarios/tiny.json")) << r.out;
  EXPECT_LT(r.out.find("sub/poison.json"), r.out.find("tiny.json")) << "sorted by path";
  EXPECT_TRUE(contains(r.out, "\n2 scenarios\n")) << r.out;

  CliRun j = kvcheck("list scenarios scenarios/tiny.json --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json rows = json::parse(j.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["name"], "tiny");
  EXPECT_EQ(rows[0]["expect"], "clean");
  EXPECT_GT(rows[0]["tokens"].get<int64_t>(), 0);
  EXPECT_GT(rows[0]["estimated_bytes"].get<int64_t>(), 0);

  // An invalid file is named (exit 2), the valid ones still listed.
  write("scenarios/broken.json", "{\"format\": 1, \"model\": {\"layers\": -1}}");
  CliRun bad = kvcheck("list scenarios scenarios");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "broken.json")) << bad.err;
  EXPECT_TRUE(contains(bad.out, "\n2 scenarios\n")) << bad.out;
}

}  // namespace
}  // namespace kv::test
