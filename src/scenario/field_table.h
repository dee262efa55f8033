// field_table.h — the scenario format as data: every key a scenario may hold, with its JSON type,
// range, default and a one-line doc.
//
// fields.cpp builds each entry and the reader of that key from the same builder call, so the
// table says what the parser does. Generated from it: the JSON Schema (schema_json.h), the docs'
// field table (schema_markdown.h) and the limits of command-line options that replace a field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/json_value.h"

namespace kv {

// One form a value may take.
struct ValueForm {
  // range: a [min, max] pair of integers, or one integer n meaning [n, n].
  enum class Kind { integer, number, boolean, string, choice, range, array, object, constant };
  Kind kind = Kind::integer;

  // integer, number, range (both ends): JSON numbers, so that a uint64 and the largest float are
  // exact. Both are always set.
  Json minimum;
  Json maximum;
  bool exclusive_minimum = false;  // number only
  bool exclusive_maximum = false;

  std::vector<std::string> choices;  // choice: every spelling, in name-table order
  std::size_t min_length = 0;        // string
  std::size_t max_length = 0;        // string, in bytes; 0: no limit of its own
  std::string pattern;               // string: an ECMA-262 regular expression it matches; "": any

  std::shared_ptr<const ValueForm> items;  // array: what each element is
  std::size_t min_items = 0;
  std::optional<std::size_t> max_items;    // nullopt: no limit of its own
  bool unique_items = false;

  Json constant;     // constant: the one value allowed
  std::string note;  // how the value is held, for the docs ("64-bit", "a float"); may be empty
};

// A spelling of a choice that the format renamed: a file may still use it (old_spellings.h).
struct RenamedChoice {
  std::string old_name;
  std::string new_name;
};

struct FieldInfo {
  std::string pointer;          // "/workload/epochs"; an object comes before its keys
  std::vector<ValueForm> forms;  // one form, or the alternatives a value may take
  bool required = false;
  // What a file that leaves the key out gets, rendered from a default-constructed Scenario; null
  // where that is no value to write down (a name taken from the file, a tolerance by dtype).
  Json default_value;
  // false where the default holds only with another field's value, so that writing it out could
  // make a file invalid (checks.sampled_requests): then the schema does not state it.
  bool default_in_schema = true;
  // Said of the default after its value, or instead of it: "by cache dtype". Markdown.
  std::string default_note;
  std::string doc;  // one line, Markdown
  std::vector<RenamedChoice> renamed;  // choice fields: old spellings, read as the new ones
  // Leaves only: the field's value in a scenario, as a file would spell it.
  std::function<Json(const Scenario&)> value_in;

  bool is_object() const { return forms.size() == 1 && forms[0].kind == ValueForm::Kind::object; }
  std::string key() const { return pointer.substr(pointer.rfind('/') + 1); }
  std::string parent() const { return pointer.substr(0, pointer.rfind('/')); }
};

// Every field, objects before their keys, in the order the format documents them.
const std::vector<FieldInfo>& scenario_field_table();

// The entry of one pointer; throws std::out_of_range for a key the format does not have.
const FieldInfo& scenario_field(std::string_view pointer);

// The default as the docs state it (Markdown): "`[8, 32]`", "`8` with `reference` `\"sampled\"`",
// "by cache dtype"; "required" for a required key, "" for an object.
std::string default_text(const FieldInfo& field);

struct IntegerBounds {
  int64_t min = 0;
  int64_t max = 0;
};
// The bounds of an integer field (for an option that replaces it); throws std::logic_error when
// the field is not a plain integer.
IntegerBounds integer_bounds(const FieldInfo& field);

}  // namespace kv
