// schema_sync_test.cpp — the committed copies of what the field table generates must be what it
// generates today: scenarios/schema/scenario.schema.json (for editors) and the field table of
// docs/scenario-format.md.
// Whether the table itself says what the parser does is field_table_test.cpp's question.
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "scenario/parse.h"
#include "scenario/schema_json.h"
#include "scenario/schema_markdown.h"

namespace kv {
namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << relative;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The first line where two texts differ, for a message that points at it.
std::string first_difference(const std::string& committed, const std::string& generated) {
  std::size_t line = 1, line_start = 0, i = 0;
  for (; i < committed.size() && i < generated.size() && committed[i] == generated[i]; ++i)
    if (committed[i] == '\n') ++line, line_start = i + 1;
  const auto line_of = [&](const std::string& s) {
    return s.substr(line_start, s.find('\n', line_start) - line_start);
  };
  return "first difference at line " + std::to_string(line) + "\n  committed: " +
         line_of(committed) + "\n  generated: " + line_of(generated);
}

TEST(SchemaSync, CommittedSchemaIsTheGeneratedOne) {
  const std::string committed = read_source_file("scenarios/schema/scenario.schema.json");
  const std::string generated = scenario_schema_text();
  EXPECT_TRUE(committed == generated)
      << "scenarios/schema/scenario.schema.json is not what the field table generates ("
      << first_difference(committed, generated) << ").\nRegenerate it from the repository root:\n"
      << "  build/kvcheck schema scenario > scenarios/schema/scenario.schema.json";
}

constexpr const char* kBegin = "<!-- scenario-fields:begin -->\n";
constexpr const char* kEnd = "<!-- scenario-fields:end -->";

constexpr const char* kFieldsDoc = "docs/scenario-format.md";

TEST(SchemaSync, DocsFieldTableIsTheGeneratedOne) {
  const std::string doc = read_source_file(kFieldsDoc);
  const std::size_t begin = doc.find(kBegin);
  const std::size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << kFieldsDoc << " has no " << kBegin;
  ASSERT_NE(end, std::string::npos) << kFieldsDoc << " has no " << kEnd;
  ASSERT_LT(begin, end);
  EXPECT_EQ(doc.find(kBegin, begin + 1), std::string::npos)
      << "two field tables in " << kFieldsDoc;

  const std::size_t from = begin + std::string(kBegin).size();
  const std::string committed = doc.substr(from, end - from);
  const std::string generated = scenario_fields_markdown();
  EXPECT_TRUE(committed == generated)
      << kFieldsDoc << "'s scenario field table is not what the field table generates ("
      << first_difference(committed, generated) << ").\nReplace the lines between "
      << "`<!-- scenario-fields:begin -->` and `<!-- scenario-fields:end -->` with the output of\n"
      << "  build/kvcheck schema scenario --markdown";
  // One copy only: README.md is the front door and points at the docs (a copy there goes stale).
  EXPECT_EQ(read_source_file("README.md").find(kBegin), std::string::npos)
      << "README.md holds a field table; it lives in " << kFieldsDoc;
}

TEST(SchemaSync, GeneratedSchemaIsDraft202012AndClosed) {
  const Json schema = scenario_json_schema();
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["required"], Json::array({"format"}));
  // Every object forbids unknown keys, as the parser does.
  std::vector<const Json*> objects = {&schema};
  int seen = 0;
  while (!objects.empty()) {
    const Json& o = *objects.back();
    objects.pop_back();
    ++seen;
    EXPECT_EQ(o.value("additionalProperties", true), false) << o.value("description", "");
    for (const auto& [key, child] : o["properties"].items())
      if (child.contains("properties")) objects.push_back(&child);
  }
  // top level, model, cache, engine, cuda_graphs, workload, faults, checks, site_tolerances,
  // backend
  EXPECT_EQ(seen, 10);
}

TEST(SchemaSync, KnownKeysKeepTheDocumentedOrder) {
  const auto keys = known_scenario_keys();
  EXPECT_EQ(keys.size(), 10u);
  EXPECT_EQ(keys.at("").front(), "format");
  EXPECT_EQ(keys.at("/engine/cuda_graphs"), (std::vector<std::string>{"mode", "capture_sizes"}));
}

}  // namespace
}  // namespace kv
