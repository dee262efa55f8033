// field_table.cpp — questions asked of the scenario field table (built in fields.cpp).
#include "scenario/field_table.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "scenario/parse.h"
#include "scenario/schema_text.h"

namespace kv {

const FieldInfo& scenario_field(std::string_view pointer) {
  const auto& table = scenario_field_table();
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const FieldInfo& f) { return f.pointer == pointer; });
  if (it == table.end())
    throw std::out_of_range("the scenario format has no field " + std::string(pointer));
  return *it;
}

std::string default_text(const FieldInfo& field) {
  if (field.is_object()) return "";
  if (field.required) return "required";
  std::string text =
      field.default_value.is_null() ? "" : "`" + compact_json(field.default_value) + "`";
  if (!field.default_note.empty()) text += (text.empty() ? "" : " ") + field.default_note;
  return text;
}

IntegerBounds integer_bounds(const FieldInfo& field) {
  if (field.forms.size() != 1 || field.forms[0].kind != ValueForm::Kind::integer)
    throw std::logic_error(field.pointer + " is not an integer field");
  return {field.forms[0].minimum.get<int64_t>(), field.forms[0].maximum.get<int64_t>()};
}

std::map<std::string, std::vector<std::string>> known_scenario_keys() {
  std::map<std::string, std::vector<std::string>> keys;
  for (const FieldInfo& f : scenario_field_table()) keys[f.parent()].push_back(f.key());
  return keys;
}

}  // namespace kv
