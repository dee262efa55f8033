// result_schema_test.cpp — the committed result schema is the generated one, it lists the tables a
// result names (sites, ops, check kinds) exactly, and device_info's fields as written.
#include "report/result_schema.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ops/op_table.h"
#include "report/result_json.h"
#include "result/check_sites.h"
#include "sample_result.h"
#include "tests/report/schema_test_support.h"

namespace kv {
namespace {

TEST(ResultSchema, CommittedFileIsTheGeneratedOne) {
  EXPECT_EQ(committed_schema("result.schema.json"), result_schema_text())
      << "scenarios/schema/result.schema.json is stale; regenerate it with "
         "`build/kvcheck schema result > scenarios/schema/result.schema.json`";
}

TEST(ResultSchema, ListsEverySiteOpAndCheckKind) {
  const auto doc = nlohmann::json::parse(result_schema_text());
  const auto& failure = doc["properties"]["first_failure"]["oneOf"][1]["properties"];
  ASSERT_EQ(failure["site"]["enum"].size(), all_check_sites().size());
  for (size_t i = 0; i < all_check_sites().size(); ++i)
    EXPECT_EQ(failure["site"]["enum"][i], std::string(all_check_sites()[i].name));
  ASSERT_EQ(failure["ops"]["items"]["enum"].size(), all_device_ops().size());
  for (size_t i = 0; i < all_device_ops().size(); ++i)
    EXPECT_EQ(failure["ops"]["items"]["enum"][i], std::string(all_device_ops()[i].name));
  ASSERT_EQ(failure["check"]["enum"].size(), kNumCheckKinds);
  EXPECT_EQ(doc["properties"]["schema"]["const"], "kvcheck.result/2");
}

// device_info and its gpu block: required, and exactly the fields to_json writes.
TEST(ResultSchema, DeviceInfoHasTheFieldsTheDocumentWrites) {
  const auto doc = nlohmann::json::parse(result_schema_text());
  const auto& required = doc["required"];
  EXPECT_NE(std::find(required.begin(), required.end(), "device_info"), required.end());
  const auto& info = doc["properties"]["device_info"]["oneOf"][1];
  const auto& gpu = info["properties"]["gpu"]["oneOf"][1];
  RunResult r = test::sample_result();
  r.device_info->gpu = test::sample_gpu();
  const auto written = to_json(r)["device_info"];
  EXPECT_EQ(keys_of(info["properties"]), keys_of(written));
  EXPECT_EQ(keys_of(gpu["properties"]), keys_of(written["gpu"]));
  EXPECT_EQ(info["required"].size(), written.size());
  EXPECT_EQ(gpu["required"].size(), written["gpu"].size());
}

}  // namespace
}  // namespace kv
