// validate.h — the checks that relate fields to each other (a value that is fine on its own but
// not next to another), run after every field has been read.
#pragma once

#include "scenario/json_value.h"

namespace kv {

// Throws ScenarioFailure pointing at the field to change. `doc` is the document `s` came from; it
// tells a value the user wrote from a default, so a message can say which one it is.
void validate_scenario(const Scenario& s, const Json& doc);

}  // namespace kv
