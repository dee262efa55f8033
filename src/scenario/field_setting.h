// field_setting.h — `--set KEY=VALUE`: one scenario field changed for a run, as if the file had
// it. KEY is a dotted path (cache.block_size) or a JSON pointer (/cache/block_size); VALUE is
// JSON (16, "bf16", [1, 2]), or, where it does not parse as JSON, the text as a string. The
// setting is applied to the document before the field table reads it, so every rule of the format
// judges it, and an error at it says it came from --set.
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace kv {

struct FieldSetting {
  std::string given;       // as typed: "cache.block_size=16"
  std::string pointer;     // "/cache/block_size"
  std::string value_json;  // the value as JSON text: "16"
};

// The setting, or why KEY=VALUE is not one (no '=', an empty key, an empty pointer token).
std::variant<FieldSetting, std::string> parse_field_setting(const std::string& text);

}  // namespace kv
