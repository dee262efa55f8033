// result_schema.h — the JSON Schema of the result document (result_json.h), generated from the
// tables it names: check sites, ops, check kinds, regressions, enum spellings. `kvcheck schema
// result` prints it; scenarios/schema/result.schema.json is the committed copy, and a test keeps
// the two equal.
#pragma once

#include <string>

namespace kv {

// The whole schema as committed (schema_text layout), ending in a newline.
std::string result_schema_text();

}  // namespace kv
