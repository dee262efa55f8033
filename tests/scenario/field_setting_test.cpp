// field_setting_test.cpp — `--set KEY=VALUE`: keys in both spellings, values as JSON or text, and
// a setting judged by the format's rules as if the file had it, its errors saying where it came
// from.
#include <gtest/gtest.h>

#include "scenario/field_setting.h"
#include "scenario/parse.h"

namespace kv {
namespace {

FieldSetting setting(const std::string& text) {
  auto parsed = parse_field_setting(text);
  if (auto* error = std::get_if<std::string>(&parsed)) ADD_FAILURE() << text << ": " << *error;
  return std::get_if<FieldSetting>(&parsed) ? std::get<FieldSetting>(parsed) : FieldSetting{};
}

std::string refusal(const std::string& text) {
  auto parsed = parse_field_setting(text);
  auto* error = std::get_if<std::string>(&parsed);
  return error ? *error : "";
}

const char* kBase = R"({"format": 1, "name": "base", "model": {"layers": 1},
  "workload": {"requests": 2, "prompt_len": 8, "new_tokens": 2}})";

TEST(FieldSetting, KeysInEitherSpellingValuesAsJsonElseText) {
  FieldSetting s = setting("cache.block_size=16");
  EXPECT_EQ(s.pointer, "/cache/block_size");
  EXPECT_EQ(s.value_json, "16");
  EXPECT_EQ(setting("/cache/dtype=\"fp8_e4m3\"").value_json, "\"fp8_e4m3\"");
  EXPECT_EQ(setting("cache.dtype=fp8_e4m3").value_json, "\"fp8_e4m3\"");  // bare text: a string
  EXPECT_EQ(setting("workload.prompt_len=[4, 8]").value_json, "[4,8]");
  EXPECT_EQ(setting("a/b.c~d=1").pointer, "/a~1b/c~0d");
  EXPECT_EQ(setting("x=a=b").value_json, "\"a=b\"");  // the first '=' splits
  EXPECT_NE(refusal("cache.block_size").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(refusal("=3").find("the key is empty"), std::string::npos);
  EXPECT_NE(refusal("cache..x=3").find("has an empty part"), std::string::npos);
  EXPECT_NE(refusal("/cache/=3").find("has an empty part"), std::string::npos);
}

TEST(FieldSetting, ASettingIsReadAsIfTheFileHadIt) {
  auto parsed = parse_scenario(kBase, "base.json",
                               {setting("cache.block_size=7"), setting("engine.prefix_caching=false"),
                                setting("workload.requests=3")});
  ASSERT_TRUE(std::holds_alternative<Scenario>(parsed)) << std::get<ScenarioError>(parsed).message;
  const Scenario& s = std::get<Scenario>(parsed);
  EXPECT_EQ(s.cache.block_size, 7);
  EXPECT_FALSE(s.engine.prefix_caching);
  EXPECT_EQ(s.workload.num_requests, 3);
}

TEST(FieldSetting, ItsErrorsNameTheFieldAndTheSetting) {
  auto error = [](const std::string& text) {
    auto parsed = parse_scenario(kBase, "base.json", {setting(text)});
    return std::holds_alternative<ScenarioError>(parsed) ? std::get<ScenarioError>(parsed)
                                                         : ScenarioError{"-", "accepted"};
  };
  ScenarioError e = error("cache.block_size=0");
  EXPECT_EQ(e.pointer, "/cache/block_size");
  EXPECT_NE(e.message.find("(given by --set cache.block_size=0)"), std::string::npos) << e.message;
  e = error("cache.blocksize=3");
  EXPECT_EQ(e.pointer, "/cache/blocksize");
  EXPECT_NE(e.message.find("did you mean \"block_size\""), std::string::npos) << e.message;
  e = error("model.layers.x=1");
  EXPECT_EQ(e.pointer, "/model/layers");
  EXPECT_NE(e.message.find("--set model.layers.x=1: /model/layers is 1"), std::string::npos)
      << e.message;
  e = error("/model/layer_kinds/3=\"mla\"");
  EXPECT_NE(e.message.find("--set"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace kv
