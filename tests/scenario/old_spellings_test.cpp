// old_spellings_test.cpp — values the format renamed (enum_names.h's old-name tables): an old
// spelling reads as the value its new one does and is listed for the warning; today's spelling
// is not; a value that is neither is refused as before.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "scenario/field_table.h"
#include "scenario/old_spellings.h"
#include "scenario/parse.h"
#include "tests/scenario/parse_ok.h"

namespace kv {
namespace {

// A scenario whose only written value is `value`, at the field `pointer` ("/cache/layout").
std::string with_value(const std::string& pointer, const std::string& value) {
  Json doc = {{"format", 1}};
  doc[Json::json_pointer(pointer)] = value;
  return doc.dump();
}

std::vector<const FieldInfo*> renamed_fields() {
  std::vector<const FieldInfo*> out;
  for (const FieldInfo& f : scenario_field_table())
    if (!f.renamed.empty()) out.push_back(&f);
  return out;
}

TEST(OldSpellings, TheRenamedFieldsAreTheCacheLayoutAndPool) {
  std::vector<std::string> pointers;
  for (const FieldInfo* f : renamed_fields()) pointers.push_back(f->pointer);
  EXPECT_EQ(pointers, (std::vector<std::string>{"/cache/layout", "/cache/pool"}));
  const auto& layout = scenario_field("/cache/layout").renamed;
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].old_name, "plain");
  EXPECT_EQ(layout[0].new_name, "kv_separate");
  EXPECT_EQ(layout[1].old_name, "interleaved");
  EXPECT_EQ(layout[1].new_name, "kv_interleaved");
  const auto& pool = scenario_field("/cache/pool").renamed;
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool[0].old_name, "separate");
  EXPECT_EQ(pool[0].new_name, "per_layer");
}

// An old name that is also a name of today would make a file's meaning depend on which is meant.
TEST(OldSpellings, EveryOldNameMapsToAChoiceAndIsNoChoiceItself) {
  for (const FieldInfo* f : renamed_fields()) {
    const auto& choices = f->forms.at(0).choices;
    for (const RenamedChoice& r : f->renamed) {
      EXPECT_NE(std::find(choices.begin(), choices.end(), r.new_name), choices.end())
          << f->pointer << ": " << r.new_name;
      EXPECT_EQ(std::find(choices.begin(), choices.end(), r.old_name), choices.end())
          << f->pointer << ": " << r.old_name;
    }
  }
}

TEST(OldSpellings, AnOldSpellingReadsAsTheNewOneAndIsListed) {
  int checked = 0;
  for (const FieldInfo* f : renamed_fields()) {
    for (const RenamedChoice& r : f->renamed) {
      const Scenario old = parse_ok(with_value(f->pointer, r.old_name));
      const Scenario now = parse_ok(with_value(f->pointer, r.new_name));
      EXPECT_EQ(f->value_in(old), Json(r.new_name)) << f->pointer << " " << r.old_name;
      EXPECT_EQ(f->value_in(old), f->value_in(now)) << f->pointer << " " << r.old_name;
      ASSERT_EQ(old.old_spellings.size(), 1u) << f->pointer << " " << r.old_name;
      EXPECT_EQ(old.old_spellings[0].pointer, f->pointer);
      EXPECT_EQ(old.old_spellings[0].old_name, r.old_name);
      EXPECT_EQ(old.old_spellings[0].new_name, r.new_name);
      EXPECT_TRUE(now.old_spellings.empty()) << f->pointer << " " << r.new_name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
}

TEST(OldSpellings, TheParsedValueIsTheEnumOfTheNewName) {
  const Scenario s = parse_ok(R"({"format": 1, "model": {"layers": ["attention", "linear"]},
                                  "cache": {"layout": "interleaved", "pool": "hybrid"},
                                  "engine": {"prefix_caching": false}})");
  EXPECT_EQ(s.cache.layout, KvLayout::kv_interleaved);
  EXPECT_EQ(s.cache.pool, PoolKind::hybrid);
  EXPECT_EQ(parse_ok(R"({"format": 1, "cache": {"layout": "plain", "pool": "separate"}})")
                .cache.pool,
            PoolKind::per_layer);
}

TEST(OldSpellings, TodaysSpellingsWarnAboutNothing) {
  const Scenario s = parse_ok(R"({"format": 1, "cache": {"layout": "kv_separate",
                                                          "pool": "per_layer"}})");
  EXPECT_TRUE(s.old_spellings.empty());
  EXPECT_EQ(old_spellings_warning(s.old_spellings, "x.json"), "");
}

TEST(OldSpellings, OneWarningPerFileNamesEveryFieldOldAndNew) {
  const Scenario s = parse_ok(R"({"format": 1, "cache": {"pool": "separate", "layout": "plain"}})");
  ASSERT_EQ(s.old_spellings.size(), 2u);
  EXPECT_EQ(old_spellings_warning(s.old_spellings, "scenarios/x.json"),
            R"(scenarios/x.json: deprecated spellings, read as the new ones: /cache/layout )"
            R"("plain" is now "kv_separate"; /cache/pool "separate" is now "per_layer"; rename )"
            R"(them in the file)");
  EXPECT_EQ(old_spellings_warning({s.old_spellings[0]}, ""),
            R"(deprecated spelling, read as the new one: /cache/layout "plain" is now )"
            R"("kv_separate"; rename it in the file)");
}

TEST(OldSpellings, AnUnknownValueIsStillRefusedWithTodaysNames) {
  const auto r = parse_scenario(R"({"format": 1, "cache": {"pool": "shared"}})", "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  const ScenarioError& e = std::get<ScenarioError>(r);
  EXPECT_EQ(e.pointer, "/cache/pool");
  EXPECT_EQ(e.message, R"(got "shared" (a string), expected one of "per_layer", "hybrid")");
}

// The rewrite looks only where the field is: an old name elsewhere, or under a parent that is
// not an object, is left to the readers.
TEST(OldSpellings, OnlyTheFieldItselfIsRewritten) {
  Json doc = Json::parse(R"({"format": 1, "description": "plain", "cache": 5})");
  EXPECT_TRUE(replace_old_spellings(doc).empty());
  EXPECT_EQ(doc["description"], "plain");
  const auto r = parse_scenario(R"({"format": 1, "cache": {"layout": ["plain"]}})", "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  EXPECT_EQ(std::get<ScenarioError>(r).pointer, "/cache/layout");
}

}  // namespace
}  // namespace kv
