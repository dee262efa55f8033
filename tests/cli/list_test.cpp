// list_test.cpp — `kvcheck list` names every registered regression, the ops and the devices.
#include <nlohmann/json.hpp>

#include "cli_runner.h"
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
  for (const char* op : {"write_kv", "paged_decode", "gather_kv", "varlen_attention",
                         "merge_states", "linear_attention", "zero_blocks", "poison_blocks",
                         "quant_fp8", "embed", "rms_norm", "linear", "argmax"})
    EXPECT_TRUE(contains(r.out, op)) << op;
  EXPECT_TRUE(contains(r.out, "host")) << r.out;
  EXPECT_TRUE(contains(r.out, "cuda")) << r.out;
}

TEST_F(ListCommand, JsonMatchesTheRegistry) {
  CliRun r = kvcheck("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["schema"], "kvcheck.list/1");
  ASSERT_EQ(doc["regressions"].size(), all_regressions().size());
  for (size_t i = 0; i < all_regressions().size(); ++i) {
    EXPECT_EQ(doc["regressions"][i]["name"], std::string(all_regressions()[i].name));
    EXPECT_FALSE(doc["regressions"][i]["models"].get<std::string>().empty());
    EXPECT_FALSE(doc["regressions"][i]["bug_class"].get<std::string>().empty());
  }
  EXPECT_EQ(doc["ops"].size(), 13u);
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["devices"][0]["name"], "host");
  EXPECT_EQ(doc["devices"][0]["available"], true);
  EXPECT_EQ(doc["devices"][1]["name"], "cuda");
#ifndef KVCHECK_HAVE_CUDA
  EXPECT_EQ(doc["devices"][1]["available"], false);
  EXPECT_TRUE(contains(doc["devices"][1]["note"].get<std::string>(), "not built"));
#endif
}

}  // namespace
}  // namespace kv::test
