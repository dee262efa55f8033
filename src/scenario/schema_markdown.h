// schema_markdown.h — the documented table of scenario fields (Markdown), generated from the field
// table (field_table.h). docs/scenario-format.md holds it between
// `<!-- scenario-fields:begin -->` and `<!-- scenario-fields:end -->`; `kvcheck schema scenario
// --markdown` prints it and a unit test keeps the two the same.
#pragma once

#include <string>

namespace kv {

// One row per field, objects in bold before their keys; ends in a newline.
std::string scenario_fields_markdown();

}  // namespace kv
