// json_text.h — scenario text to a JSON document, with errors a person can act on: a syntax
// error names its line and column, and a key given twice in one object is an error rather than
// the silent "last one wins" of most JSON libraries.
#pragma once

#include <cstddef>
#include <string_view>

#include "scenario/json_value.h"

namespace kv {

struct TextPosition {
  std::size_t line = 1;    // 1-based
  std::size_t column = 1;  // 1-based, in bytes
};

// Position of the byte at 0-based `offset` (clamped to the end of the text).
TextPosition position_of(std::string_view text, std::size_t offset);

// Throws ScenarioFailure with pointer "" ("line 12, column 5: …") on a syntax error, or with the
// key's pointer when a key repeats.
Json parse_json_text(std::string_view text);

}  // namespace kv
