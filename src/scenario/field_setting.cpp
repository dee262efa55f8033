// field_setting.cpp — parses `--set KEY=VALUE` (applied by parse.cpp).
#include "scenario/field_setting.h"

#include <fmt/format.h>

#include "scenario/json_text.h"

namespace kv {

namespace {

// "cache.block_size" -> "/cache/block_size", each key escaped as RFC 6901 asks.
std::string pointer_of_dotted(const std::string& key) {
  std::string pointer;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    pointer = child_pointer(pointer, key.substr(start, dot == std::string::npos ? dot : dot - start));
    if (dot == std::string::npos) return pointer;
    start = dot + 1;
  }
}

}  // namespace

std::variant<FieldSetting, std::string> parse_field_setting(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    return fmt::format("\"{}\" is not KEY=VALUE (e.g. cache.block_size=16 or /cache/dtype=\"fp8_e4m3\")",
                       text);
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  if (key.empty() || key == "/")
    return fmt::format("\"{}\": the key is empty; expected a field such as cache.block_size", text);
  const std::string pointer = key.front() == '/' ? key : pointer_of_dotted(key);
  if (pointer.find("//") != std::string::npos || pointer.back() == '/')
    return fmt::format("\"{}\": the key {} has an empty part; expected a field such as "
                       "cache.block_size",
                       text, key);
  std::string value_json;
  try {
    value_json = parse_json_text(value).dump();
  } catch (const ScenarioFailure&) {
    value_json = Json(value).dump();  // not JSON: the text itself, as a string
  }
  return FieldSetting{.given = text, .pointer = pointer, .value_json = value_json};
}

}  // namespace kv
