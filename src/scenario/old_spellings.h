// old_spellings.h — values a scenario file spells as the format used to: enum names renamed since
// (the old-name tables of enum_names.h). They are read as today's spelling, and the command line
// warns once per file, so a file keeps working while its author is told what to rename.
#pragma once

#include <string>
#include <vector>

#include "scenario/json_value.h"
#include "scenario/scenario.h"

namespace kv {

// Replaces each old spelling in `doc` by today's, so that the field readers, the validation and
// their messages know today's names only; returns what it replaced, in field-table order.
std::vector<OldSpelling> replace_old_spellings(Json& doc);

// The one warning for a file that used old spellings ("" when it used none): `scenarios/x.json:
// deprecated spelling, read as the new one: /cache/layout "plain" is now "kv_separate"; rename it
// in the file` (with more than one, each after a "; ").
std::string old_spellings_warning(const std::vector<OldSpelling>& old, const std::string& path);

}  // namespace kv
