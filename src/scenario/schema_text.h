// schema_text.h — JSON as kvcheck's committed schema files are written: two-space indentation,
// and an array or object on one line wherever it fits in 100 columns, so that a schema reads like
// a hand-written one and `kvcheck schema KIND` reproduces the committed file byte for byte.
#pragma once

#include <string>

#include "scenario/json_value.h"

namespace kv {

// The whole document, ending in a newline.
std::string schema_text(const Json& doc);

// One value on one line: `["attention", "mla"]`, `{"type": "integer", "minimum": 1}`.
std::string compact_json(const Json& value);

}  // namespace kv
