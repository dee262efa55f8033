// json_value.h — typed reads of one JSON value, each failing with the format's error message:
// the value's JSON pointer, what was found and what was expected.
//
// Inside the parser a failure is thrown as ScenarioFailure so that the field table stays a flat
// list of reads; parse_scenario() catches it and returns it as its result.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "scenario/enum_names.h"
#include "scenario/parse.h"
#include "scenario/suggest.h"

namespace kv {

// ordered_json keeps keys in document order, so "the first error" is the first in the file.
using Json = nlohmann::ordered_json;

struct ScenarioFailure {
  ScenarioError error;
};

[[noreturn]] void fail(std::string pointer, std::string message);

// RFC 6901: a key holding '~' or '/' is escaped as "~0" / "~1".
std::string child_pointer(const std::string& parent, std::string_view key);
std::string child_pointer(const std::string& parent, std::size_t index);

// The value as a message shows it: `3.5`, `"4" (a string)`, `true (a boolean)`, `[1, 2] (an
// array)`; long values are cut short.
std::string describe(const Json& v);

// "an integer from 1 to 256"
std::string integer_range_text(int64_t lo, int64_t hi);

// Integers: integral JSON numbers only (3 and 3.0, not 3.5, "3" or true), within [lo, hi].
// `why`, when given, ends the message in parentheses: the reason for a bound that is not obvious.
int32_t read_int(const Json& v, const std::string& pointer, int32_t lo, int32_t hi,
                 std::string_view why = {});
uint64_t read_uint64(const Json& v, const std::string& pointer);
// A number strictly between lo and hi.
double read_number_between(const Json& v, const std::string& pointer, double lo, double hi);
// A number > 0 that stays finite and non-zero as a float (a dequantisation scale).
float read_positive_float(const Json& v, const std::string& pointer);
bool read_bool(const Json& v, const std::string& pointer);
std::string read_string(const Json& v, const std::string& pointer);
// An array whose length is within [min_size, max_size]; `what` names one element.
const Json::array_t& read_array(const Json& v, const std::string& pointer, std::string_view what,
                                std::size_t min_size, std::size_t max_size);
void require_object(const Json& v, const std::string& pointer);

template <class E, std::size_t N>
E read_enum(const Json& v, const std::string& pointer, const std::array<EnumName<E>, N>& table) {
  const std::vector<std::string> names = enum_names(table);
  if (!v.is_string())
    fail(pointer, "got " + describe(v) + ", expected one of " + quoted_list(names));
  const auto& s = v.get_ref<const std::string&>();
  if (auto e = enum_from_name(table, s)) return *e;
  const auto best = closest_name(s, names);
  fail(pointer, "got " + describe(v) + ", expected one of " + quoted_list(names) +
                    (best ? "; did you mean \"" + *best + "\"?" : ""));
}

}  // namespace kv
