// json_text.h — scenario text to a JSON document, with errors a person can act on: a syntax
// error names its line and column, and a key given twice in one object is an error rather than
// the silent "last one wins" of most JSON libraries.
#pragma once

#include <cstddef>
#include <string_view>

#include "scenario/json_value.h"

namespace kv {

// Arrays and objects may nest this deep, the top-level object counting as 1. A scenario needs 4;
// the limit keeps a hostile document (an array nested 50,000 deep) from exhausting the stack of
// anything that walks the parsed value recursively. It is checked as the parser opens each
// array or object, so no deeper value is ever built.
inline constexpr std::size_t kMaxJsonDepth = 64;

struct TextPosition {
  std::size_t line = 1;    // 1-based
  std::size_t column = 1;  // 1-based, in bytes
};

// Position of the byte at 0-based `offset` (clamped to the end of the text).
TextPosition position_of(std::string_view text, std::size_t offset);

// Throws ScenarioFailure with pointer "" ("line 12, column 5: …") on a syntax error, or with the
// key's pointer when a key repeats, or with the pointer of the array or object that nests deeper
// than kMaxJsonDepth.
Json parse_json_text(std::string_view text);

}  // namespace kv
