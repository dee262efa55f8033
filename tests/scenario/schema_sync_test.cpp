// schema_sync_test.cpp — scenarios/schema/scenario.schema.json and the parser's field table must
// describe the same format: the same keys per object, and for every leaf the same type, integer
// range and enum choices. The leaf check probes the parser with a wrong value and reads the range
// or the choices back from its error message, so neither side can change alone.
#include <cctype>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenario/parse.h"

namespace kv {
namespace {

using Json = nlohmann::ordered_json;

Json load_schema() {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/scenarios/schema/scenario.schema.json");
  EXPECT_TRUE(in.good()) << "cannot open the schema";
  return Json::parse(in);
}

const Json& resolve(const Json& schema, const Json& node) {
  if (!node.contains("$ref")) return node;
  const std::string ref = node["$ref"].get<std::string>();  // "#/$defs/…"
  return schema.at(Json::json_pointer(ref.substr(1)));
}

// Pointer of every object in the schema -> its property names.
void collect_objects(const Json& node, const std::string& pointer,
                     std::map<std::string, std::set<std::string>>& out) {
  if (!node.contains("properties")) return;
  EXPECT_EQ(node.value("additionalProperties", true), false)
      << pointer << ": every object must forbid unknown keys";
  auto& keys = out[pointer];
  for (const auto& [key, child] : node["properties"].items()) {
    keys.insert(key);
    collect_objects(child, pointer + "/" + key, out);
  }
}

TEST(SchemaSync, SameKeysPerObject) {
  const Json schema = load_schema();
  std::map<std::string, std::set<std::string>> from_schema;
  collect_objects(schema, "", from_schema);

  std::map<std::string, std::set<std::string>> from_parser;
  for (const auto& [pointer, keys] : known_scenario_keys())
    from_parser[pointer] = std::set<std::string>(keys.begin(), keys.end());

  EXPECT_EQ(from_schema, from_parser);
  // top level, model, cache, engine, cuda_graphs, workload, faults, checks
  EXPECT_EQ(from_parser.size(), 8u);
}

TEST(SchemaSync, KnownKeysKeepTheDocumentedOrder) {
  const auto keys = known_scenario_keys();
  EXPECT_EQ(keys.at("").front(), "format");
  EXPECT_EQ(keys.at("/engine/cuda_graphs"), (std::vector<std::string>{"mode", "capture_sizes"}));
}

// A wrong value for one leaf, where the parser reports it, and what its message must contain.
struct Probe {
  Json value;
  std::string pointer;
  std::string phrase;
};

std::optional<Probe> probe_for(const Json& schema, const Json& raw, const std::string& pointer) {
  const Json& node = resolve(schema, raw);
  if (node.contains("oneOf")) {  // number-or-array short forms: probe the array form
    for (const Json& branch : node["oneOf"])
      if (branch.value("type", "") == "array") return probe_for(schema, branch, pointer);
    return std::nullopt;
  }
  if (node.contains("enum")) {
    std::string choices;
    for (const Json& e : node["enum"])
      choices += (choices.empty() ? "" : ", ") + e.dump();
    return Probe{"zzz", pointer, "expected one of " + choices};
  }
  const std::string type = node.value("type", "");
  if (type == "integer")
    return Probe{"x", pointer,
                 fmt::format("expected an integer from {} to {}", node["minimum"].dump(),
                             node["maximum"].dump())};
  if (type == "number" && node.contains("exclusiveMaximum"))
    return Probe{"x", pointer,
                 fmt::format("expected a number greater than {} and less than {}",
                             node["exclusiveMinimum"].dump(), node["exclusiveMaximum"].dump())};
  if (type == "number")  // a float: bounded by the largest one
    return Probe{"x", pointer,
                 fmt::format("expected a finite number greater than {} and at most {}",
                             node["exclusiveMinimum"].dump(), node["maximum"].dump())};
  if (type == "boolean") return Probe{"x", pointer, "expected true or false"};
  if (type == "string") return Probe{1, pointer, "expected a string"};
  if (type == "array") {
    auto item = probe_for(schema, node["items"], pointer + "/0");
    if (!item) return std::nullopt;
    // Fill to the least length the schema allows, so the length is not what fails.
    item->value = Json::array_t(node.value("minItems", 1), item->value);
    return item;
  }
  return std::nullopt;  // "format": a const, tested with the parse errors
}

// `phrase` occurs and is not the start of something longer: "to 25" must not match "to 256",
// nor a list of choices a longer list.
bool contains_whole(const std::string& message, const std::string& phrase) {
  const std::size_t at = message.find(phrase);
  if (at == std::string::npos) return false;
  const std::size_t end = at + phrase.size();
  return end == message.size() || (message[end] != ',' && message[end] != '.' &&
                                   !std::isdigit(static_cast<unsigned char>(message[end])));
}

void collect_leaves(const Json& schema, const Json& node, const std::string& pointer,
                    std::vector<std::pair<std::string, Json>>& out) {
  for (const auto& [key, child] : node["properties"].items()) {
    if (child.contains("properties")) collect_leaves(schema, child, pointer + "/" + key, out);
    else out.emplace_back(pointer + "/" + key, child);
  }
}

TEST(SchemaSync, EveryLeafHasTheParsersTypeRangeAndChoices) {
  const Json schema = load_schema();
  std::vector<std::pair<std::string, Json>> leaves;
  collect_leaves(schema, schema, "", leaves);
  ASSERT_GT(leaves.size(), 30u);

  int probed = 0;
  for (const auto& [pointer, node] : leaves) {
    const auto probe = probe_for(schema, node, pointer);
    if (!probe) {
      EXPECT_EQ(pointer, "/format") << "no probe for this leaf; extend probe_for()";
      continue;
    }
    Json doc = {{"format", 1}};
    doc[Json::json_pointer(pointer)] = probe->value;
    const auto r = parse_scenario(doc.dump(), "");
    ASSERT_TRUE(std::holds_alternative<ScenarioError>(r))
        << pointer << " accepted " << probe->value;
    const ScenarioError& e = std::get<ScenarioError>(r);
    EXPECT_EQ(e.pointer, probe->pointer) << e.message;
    EXPECT_TRUE(contains_whole(e.message, probe->phrase))
        << pointer << ": the schema says \"" << probe->phrase << "\", the parser says \""
        << e.message << "\"";
    ++probed;
  }
  EXPECT_EQ(probed + 1, static_cast<int>(leaves.size()));
}

// The keys that may only be written for some models; their defaults are checked in one that has
// what they apply to.
const std::set<std::string> kMlaOnly = {"/model/kv_lora_rank", "/model/qk_rope_dim"};

Json documented_defaults(const Json& schema, bool with_mla_only) {
  std::vector<std::pair<std::string, Json>> leaves;
  collect_leaves(schema, schema, "", leaves);
  Json doc = {{"format", 1}};
  for (const auto& [pointer, node] : leaves)
    if (node.contains("default") && (with_mla_only || !kMlaOnly.contains(pointer)))
      doc[Json::json_pointer(pointer)] = node["default"];
  return doc;
}

TEST(SchemaSync, SchemaDefaultsParse) {
  // Every documented default, written out explicitly, is a valid scenario on its own...
  const Json schema = load_schema();
  const Json doc = documented_defaults(schema, false);
  const auto r = parse_scenario(doc.dump(), "");
  ASSERT_TRUE(std::holds_alternative<Scenario>(r))
      << format_error(std::get<ScenarioError>(r), "<defaults>");
  const Scenario& defaults = std::get<Scenario>(r);
  const Scenario empty = std::get<Scenario>(parse_scenario(R"({"format": 1})", ""));
  EXPECT_EQ(defaults.cache.pool, empty.cache.pool);
  EXPECT_EQ(defaults.cache.dtype, empty.cache.dtype);

  // ...and the MLA-only defaults are valid, and the parser's own, in a model with an mla layer.
  Json mla = documented_defaults(schema, true);
  mla["model"]["layers"] = {"attention", "mla"};
  const auto m = parse_scenario(mla.dump(), "");
  ASSERT_TRUE(std::holds_alternative<Scenario>(m))
      << format_error(std::get<ScenarioError>(m), "<mla defaults>");
  EXPECT_EQ(std::get<Scenario>(m).model.kv_lora_rank, empty.model.kv_lora_rank);
  EXPECT_EQ(std::get<Scenario>(m).model.qk_rope_dim, empty.model.qk_rope_dim);
  for (const auto& pointer : kMlaOnly)
    EXPECT_TRUE(mla.contains(Json::json_pointer(pointer))) << pointer << " has no default";
}

}  // namespace
}  // namespace kv
