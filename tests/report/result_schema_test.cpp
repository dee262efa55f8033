// result_schema_test.cpp — the committed result schema is the generated one, and it lists the
// tables a result names (sites, ops, check kinds) exactly.
#include "report/result_schema.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "check/check_sites.h"
#include "device/device_ops.h"

namespace kv {
namespace {

std::string committed() {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/scenarios/schema/result.schema.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ResultSchema, CommittedFileIsTheGeneratedOne) {
  EXPECT_EQ(committed(), result_schema_text())
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

}  // namespace
}  // namespace kv
