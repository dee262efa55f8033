// fields.h — reading a scenario document through the field table (field_table.h): every key a
// scenario may hold, its type, range, default, doc and where it lands in Scenario. Reading,
// unknown-key detection, known_scenario_keys() and the generated JSON Schema and docs' table all
// come from this one table.
#pragma once

#include "scenario/json_value.h"

namespace kv {

// Read every key of the top-level object `doc` into `out`, in document order; an absent key keeps
// the value `out` already holds. Per-field checks only (type, range, enum, registry names);
// relations between fields are validate_scenario()'s. Throws ScenarioFailure.
void read_scenario_fields(const Json& doc, Scenario& out);

// The key that decides how everything else is read, checked before anything else: a file of
// another version (or of none) gets this one message rather than one about some other key.
void check_format(const Json& doc);

}  // namespace kv
