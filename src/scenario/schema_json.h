// schema_json.h — the JSON Schema of scenario files (draft 2020-12), generated from the field
// table (field_table.h). scenarios/schema/scenario.schema.json is this text, committed for
// editors; `kvcheck schema scenario` prints it and a unit test keeps the two the same.
#pragma once

#include <string>

#include "scenario/json_value.h"

namespace kv {

Json scenario_json_schema();

// As committed: schema_text() of scenario_json_schema().
std::string scenario_schema_text();

}  // namespace kv
