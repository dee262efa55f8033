// json_value.cpp — typed reads of JSON values with the format's error messages.
#include "scenario/json_value.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kv {
namespace {

constexpr std::size_t kMaxShown = 48;  // longer values are cut in messages

// Cut at a UTF-8 character boundary so a message never carries half a character.
std::string shorten(std::string s) {
  if (s.size() <= kMaxShown) return s;
  std::size_t cut = kMaxShown;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

// Like dump(), but only `depth` levels deep and stopping once the text is long enough to be cut:
// a message must not recurse through (or print) a hostile, deeply nested document.
void append_shallow(const Json& v, int depth, std::string& out) {
  if (!v.is_structured()) {
    // replace: never throw on bytes that are not UTF-8 (the parser rejects them, but a message
    // must not be the thing that fails).
    out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  const bool array = v.is_array();
  if (v.empty()) {
    out += array ? "[]" : "{}";
    return;
  }
  if (depth == 0) {
    out += array ? "[…]" : "{…}";
    return;
  }
  out += array ? '[' : '{';
  bool first = true;
  for (const auto& [key, item] : v.items()) {
    if (out.size() > kMaxShown) break;
    if (!first) out += ", ";
    first = false;
    if (!array) out += Json(key).dump(-1, ' ', false, Json::error_handler_t::replace) + ": ";
    append_shallow(item, depth - 1, out);
  }
  out += array ? ']' : '}';
}

// The value as an int64 if it is an integral JSON number that fits; no rounding, no wrap-around.
std::optional<int64_t> integral_value(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    if (std::trunc(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

void fail(std::string pointer, std::string message) {
  throw ScenarioFailure{ScenarioError{std::move(pointer), std::move(message)}};
}

std::string child_pointer(const std::string& parent, std::string_view key) {
  std::string out = parent + "/";
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string child_pointer(const std::string& parent, std::size_t index) {
  return parent + "/" + std::to_string(index);
}

std::string describe(const Json& v) {
  std::string text;
  append_shallow(v, 3, text);
  text = shorten(std::move(text));
  switch (v.type()) {
    case Json::value_t::string: return text + " (a string)";
    case Json::value_t::boolean: return text + " (a boolean)";
    case Json::value_t::array: return text + " (an array)";
    case Json::value_t::object: return text + " (an object)";
    default: return text;  // numbers and null speak for themselves
  }
}

std::string integer_range_text(int64_t lo, int64_t hi) {
  return fmt::format("an integer from {} to {}", lo, hi);
}

int32_t read_int(const Json& v, const std::string& pointer, int32_t lo, int32_t hi,
                 std::string_view why) {
  const std::optional<int64_t> i = integral_value(v);
  if (!i || *i < lo || *i > hi)
    fail(pointer, "got " + describe(v) + ", expected " + integer_range_text(lo, hi) +
                      (why.empty() ? "" : " (" + std::string(why) + ")"));
  return static_cast<int32_t>(*i);
}

uint64_t read_uint64(const Json& v, const std::string& pointer) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::trunc(d) == d && d >= 0.0 && d < 18446744073709551616.0)  // 2^64
      return static_cast<uint64_t>(d);
  }
  fail(pointer, "got " + describe(v) + ", expected an integer from 0 to 18446744073709551615");
}

double read_number_between(const Json& v, const std::string& pointer, double lo, double hi) {
  // Written so that a NaN could never pass: every comparison must hold.
  if (v.is_number()) {
    const double d = v.get<double>();
    if (d > lo && d < hi) return d;
  }
  fail(pointer, fmt::format("got {}, expected a number greater than {} and less than {}",
                            describe(v), lo, hi));
}

float read_positive_float(const Json& v, const std::string& pointer) {
  constexpr double kMax = std::numeric_limits<float>::max();
  // Checked as a double first: converting a double beyond the float range is undefined.
  if (v.is_number()) {
    const double d = v.get<double>();
    if (d > 0.0 && d <= kMax && static_cast<float>(d) > 0.0f) return static_cast<float>(d);
  }
  const bool underflows = v.is_number() && v.get<double>() > 0.0 && v.get<double>() <= kMax;
  fail(pointer, fmt::format("got {}, expected a finite number greater than 0 and at most {} (the "
                            "largest float){}",
                            describe(v), kMax, underflows ? "; as a float it would be 0" : ""));
}

bool read_bool(const Json& v, const std::string& pointer) {
  if (!v.is_boolean()) fail(pointer, "got " + describe(v) + ", expected true or false");
  return v.get<bool>();
}

std::string read_string(const Json& v, const std::string& pointer) {
  if (!v.is_string()) fail(pointer, "got " + describe(v) + ", expected a string");
  return v.get<std::string>();
}

const Json::array_t& read_array(const Json& v, const std::string& pointer, std::string_view what,
                                std::size_t min_size, std::size_t max_size) {
  if (!v.is_array())
    fail(pointer, fmt::format("got {}, expected an array of {}", describe(v), what));
  const auto& a = v.get_ref<const Json::array_t&>();
  if (a.size() < min_size || a.size() > max_size) {
    const std::string count = min_size == max_size
                                  ? std::to_string(min_size)
                                  : fmt::format("{} to {}", min_size, max_size);
    fail(pointer, fmt::format("got {} elements, expected {} {}", a.size(), count, what));
  }
  return a;
}

void require_object(const Json& v, const std::string& pointer) {
  if (!v.is_object()) fail(pointer, "got " + describe(v) + ", expected an object");
}

}  // namespace kv
