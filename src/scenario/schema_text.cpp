// schema_text.cpp — the layout of generated schema files (see schema_text.h).
#include "scenario/schema_text.h"

#include <cstddef>

namespace kv {
namespace {

constexpr std::size_t kWidth = 100;

// Columns, not bytes: descriptions hold "≥", "·" and "…".
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string scalar(const Json& v) { return v.dump(-1, ' ', /*ensure_ascii=*/false); }

// `used`: the columns already taken on the line before the value, and the comma after it.
void write(const Json& v, std::size_t indent, std::size_t used, std::string& out) {
  const std::string one_line = compact_json(v);
  if (!v.is_structured() || v.empty() || used + columns(one_line) <= kWidth) {
    out += one_line;
    return;
  }
  const bool array = v.is_array();
  const std::string pad(indent + 2, ' ');
  out += array ? "[\n" : "{\n";
  std::size_t i = 0;
  for (const auto& [key, item] : v.items()) {
    out += pad;
    std::size_t taken = pad.size() + 1;
    if (!array) {
      const std::string k = scalar(Json(key)) + ": ";
      out += k;
      taken += columns(k);
    }
    write(item, indent + 2, taken, out);
    out += ++i < v.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + (array ? "]" : "}");
}

}  // namespace

std::string compact_json(const Json& value) {
  if (!value.is_structured() || value.empty()) return scalar(value);
  const bool array = value.is_array();
  std::string out = array ? "[" : "{";
  bool first = true;
  for (const auto& [key, item] : value.items()) {
    if (!first) out += ", ";
    first = false;
    if (!array) out += scalar(Json(key)) + ": ";
    out += compact_json(item);
  }
  return out + (array ? "]" : "}");
}

std::string schema_text(const Json& doc) {
  std::string out;
  write(doc, 0, 0, out);
  return out + "\n";
}

}  // namespace kv
