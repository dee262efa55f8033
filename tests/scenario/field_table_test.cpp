// field_table_test.cpp — the field table (field_table.h) says what the parser does: every bound,
// choice and length it states is where the reader accepts and refuses, and every default it
// states is what a file that leaves the key out gets. Checked by reading values, never by
// reading error messages.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "scenario/field_table.h"
#include "scenario/fields.h"
#include "scenario/regressions.h"

namespace kv {
namespace {

using Kind = ValueForm::Kind;

// Reads one value with the per-field reader only (relations between fields are not checked):
// nullopt when accepted, else the error.
std::optional<ScenarioError> read_one(const std::string& pointer, const Json& value) {
  Json doc = {{"format", 1}};
  doc[Json::json_pointer(pointer)] = value;
  // The keys an object requires (backend.library), when the probed value lives in that object.
  for (const FieldInfo& f : scenario_field_table()) {
    if (!f.required || f.pointer == "/format" || f.pointer == pointer) continue;
    const std::string parent = f.pointer.substr(0, f.pointer.rfind('/'));
    const bool inside = pointer == parent || pointer.rfind(parent + "/", 0) == 0;
    const Json::json_pointer at(parent);
    if (inside && doc.contains(at) && doc[at].is_object()) doc[Json::json_pointer(f.pointer)] = "x";
  }
  Scenario s;
  try {
    read_scenario_fields(doc, s);
    return std::nullopt;
  } catch (const ScenarioFailure& f) {
    return f.error;
  }
}

struct Probes {
  std::vector<Json> accepted;
  std::vector<Json> refused;
};

Json beyond(const Json& max) {  // the next integer above `max`, as a JSON number
  if (max == std::numeric_limits<uint64_t>::max()) return 18446744073709551616.0;
  return max.get<int64_t>() + 1;
}

Probes probes_for(const ValueForm& f) {
  switch (f.kind) {
    case Kind::integer:
      return {{f.minimum, f.maximum}, {f.minimum.get<int64_t>() - 1, beyond(f.maximum), "1"}};
    case Kind::number: {
      const double lo = f.minimum.get<double>(), hi = f.maximum.get<double>();
      Probes p{{lo / 2 + hi / 2}, {"0.5"}};
      (f.exclusive_minimum ? p.refused : p.accepted).push_back(lo);
      (f.exclusive_maximum ? p.refused : p.accepted).push_back(hi);
      p.refused.push_back(lo - 1);
      p.refused.push_back(hi * 1.01);
      return p;
    }
    case Kind::boolean: return {{true, false}, {1, "true"}};
    case Kind::string: {
      Probes p{{"x"}, {1, nullptr}};
      (f.min_length > 0 ? p.refused : p.accepted).push_back("");
      if (f.max_length > 0) {
        p.accepted.push_back(std::string(f.max_length, 'x'));
        p.refused.push_back(std::string(f.max_length + 1, 'x'));
      }
      return p;
    }
    case Kind::choice: {
      Probes p{{}, {"zzz", 0}};
      for (const auto& c : f.choices) p.accepted.push_back(c);
      return p;
    }
    case Kind::range: {
      const Json lo = f.minimum, hi = f.maximum, below = lo.get<int64_t>() - 1;
      return {{lo, hi, {lo, hi}, {hi, hi}},
              {below, beyond(hi), {below, hi}, {lo, beyond(hi)}, {hi, lo}, {lo, lo, lo}, "1"}};
    }
    case Kind::array: {
      const Probes item = probes_for(*f.items);
      const Json one = item.accepted.front();
      const auto of = [](std::size_t n, const Json& v) { return Json(std::vector<Json>(n, v)); };
      Probes p{{of(std::max<std::size_t>(f.min_items, 1), one)}, {Json::object(), "x"}};
      if (f.min_items > 0) p.refused.push_back(of(f.min_items - 1, one));
      if (f.unique_items) {
        p.refused.push_back(of(2, one));
      } else if (f.max_items) {
        p.accepted.push_back(of(*f.max_items, one));
        p.refused.push_back(of(*f.max_items + 1, one));
      }
      for (const Json& a : item.accepted) p.accepted.push_back(Json::array({a}));
      for (const Json& r : item.refused) p.refused.push_back(Json::array({r}));
      return p;
    }
    case Kind::constant: return {{f.constant}, {f.constant.get<int64_t>() + 1, "1"}};
    case Kind::object: return {{Json::object()}, {Json::array(), Json{{"zzz", 1}}}};
  }
  return {};
}

// Whether another form of the field takes values of this JSON type (then a value one form
// refuses may be another's).
bool other_form_takes(const FieldInfo& field, const ValueForm& form, const Json& value) {
  for (const ValueForm& other : field.forms) {
    if (&other == &form) continue;
    const bool number = other.kind == Kind::integer || other.kind == Kind::range;
    const bool array = other.kind == Kind::array || other.kind == Kind::range;
    if ((value.is_number() && number) || (value.is_array() && array)) return true;
  }
  return false;
}

TEST(FieldTable, EveryBoundChoiceAndLengthIsWhereTheReaderDecides) {
  int checked = 0;
  for (const FieldInfo& field : scenario_field_table()) {
    if (field.pointer == "/format") continue;  // read before everything else: check_format()
    for (const ValueForm& form : field.forms) {
      const Probes p = probes_for(form);
      for (const Json& v : p.accepted) {
        const auto error = read_one(field.pointer, v);
        EXPECT_FALSE(error) << field.pointer << " refused " << v.dump() << ": "
                            << error->message;
        ++checked;
      }
      for (const Json& v : p.refused) {
        if (other_form_takes(field, form, v)) continue;
        const auto error = read_one(field.pointer, v);
        ASSERT_TRUE(error) << field.pointer << " accepted " << v.dump();
        EXPECT_EQ(error->pointer.rfind(field.pointer, 0), 0u)
            << field.pointer << ": " << v.dump() << " refused at " << error->pointer;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 250);
}

TEST(FieldTable, FormatIsTheOneConstantAndRequired) {
  const FieldInfo& format = scenario_field("/format");
  EXPECT_TRUE(format.required);
  ASSERT_EQ(format.forms.size(), 1u);
  EXPECT_EQ(format.forms[0].constant, kScenarioFormat);
  // The one other required key: a backend's library, once there is a backend.
  for (const FieldInfo& f : scenario_field_table())
    EXPECT_EQ(f.required, f.pointer == "/format" || f.pointer == "/backend/library") << f.pointer;
}

TEST(FieldTable, StatedDefaultsAreWhatAFileWithoutTheKeyGets) {
  const Scenario parsed = std::get<Scenario>(parse_scenario(R"({"format": 1})", ""));
  int stated = 0;
  for (const FieldInfo& f : scenario_field_table()) {
    if (!f.value_in) continue;  // an object
    if (f.default_value.is_null()) {
      // Then the docs must say what a file without the key gets.
      EXPECT_TRUE(f.required || !f.default_note.empty()) << f.pointer;
      continue;
    }
    EXPECT_EQ(f.value_in(parsed), f.default_value) << f.pointer;
    ++stated;
  }
  EXPECT_GT(stated, 40);
}

TEST(FieldTable, DefaultsWrittenOutAreAValidScenarioThatReadsBackTheSame) {
  Json doc = {{"format", 1}};
  for (const FieldInfo& f : scenario_field_table())
    if (!f.default_value.is_null() && f.default_in_schema)
      doc[Json::json_pointer(f.pointer)] = f.default_value;
  doc["model"]["layers"] = {"attention", "mla"};  // so that the mla-only defaults may be written
  const auto r = parse_scenario(doc.dump(), "");
  ASSERT_TRUE(std::holds_alternative<Scenario>(r))
      << format_error(std::get<ScenarioError>(r), "<defaults>");
  for (const FieldInfo& f : scenario_field_table()) {
    if (!f.value_in || !doc.contains(Json::json_pointer(f.pointer))) continue;
    EXPECT_EQ(f.value_in(std::get<Scenario>(r)), doc[Json::json_pointer(f.pointer)]) << f.pointer;
  }
}

TEST(FieldTable, ChoicesAreTheNameTables) {
  EXPECT_EQ(scenario_field("/cache/dtype").forms[0].choices, enum_names(kCacheDTypeNames));
  EXPECT_EQ(scenario_field("/faults/padded_rows").forms[0].choices,
            enum_names(kPoisonPatternNames));
  EXPECT_EQ(scenario_field("/regressions").forms[0].items->choices, regression_names());
}

TEST(FieldTable, IntegerBoundsForTheCommandLine) {
  const IntegerBounds epochs = integer_bounds(scenario_field("/workload/epochs"));
  EXPECT_EQ(epochs.min, 1);
  EXPECT_FALSE(read_one("/workload/epochs", epochs.max));
  EXPECT_TRUE(read_one("/workload/epochs", epochs.max + 1));
  const IntegerBounds sampled = integer_bounds(scenario_field("/checks/sampled_requests"));
  EXPECT_EQ(sampled.max, kMaxRequestsPerEpoch);
  EXPECT_THROW(integer_bounds(scenario_field("/workload/prompt_len")), std::logic_error);
  EXPECT_THROW(scenario_field("/workload/epoch"), std::out_of_range);
}

TEST(FieldTable, EveryFieldHasAOneLineDocAndObjectsComeFirst) {
  std::set<std::string> seen = {""};
  for (const FieldInfo& f : scenario_field_table()) {
    EXPECT_FALSE(f.doc.empty()) << f.pointer;
    EXPECT_EQ(f.doc.find('\n'), std::string::npos) << f.pointer;
    EXPECT_EQ(f.doc.back(), '.') << f.pointer;
    EXPECT_TRUE(seen.contains(f.parent())) << f.pointer << " comes before its object";
    if (!f.required) {
      EXPECT_EQ(f.is_object(), !f.value_in) << f.pointer;
    }
    if (f.is_object()) seen.insert(f.pointer);
  }
}

}  // namespace
}  // namespace kv
