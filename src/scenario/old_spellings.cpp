// old_spellings.cpp — renamed choices found through the field table (FieldInfo::renamed).
#include "scenario/old_spellings.h"

#include <fmt/format.h>

#include "scenario/field_table.h"

namespace kv {

std::vector<OldSpelling> replace_old_spellings(Json& doc) {
  std::vector<OldSpelling> found;
  for (const FieldInfo& field : scenario_field_table()) {
    if (field.renamed.empty()) continue;
    const Json::json_pointer pointer(field.pointer);
    if (!doc.contains(pointer)) continue;  // also where a parent is not an object: false
    Json& value = doc.at(pointer);
    if (!value.is_string()) continue;  // the reader's error to report
    for (const RenamedChoice& r : field.renamed) {
      if (value.get_ref<const std::string&>() != r.old_name) continue;
      found.push_back({field.pointer, r.old_name, r.new_name});
      value = r.new_name;
      break;
    }
  }
  return found;
}

std::string old_spellings_warning(const std::vector<OldSpelling>& old, const std::string& path) {
  if (old.empty()) return "";
  std::string list;
  for (const OldSpelling& o : old)
    list += fmt::format("{}{} \"{}\" is now \"{}\"", list.empty() ? "" : "; ", o.pointer,
                        o.old_name, o.new_name);
  const bool many = old.size() > 1;
  return fmt::format("{}deprecated spelling{}, read as the new one{}: {}; rename {} in the file",
                     path.empty() ? "" : path + ": ", many ? "s" : "", many ? "s" : "", list,
                     many ? "them" : "it");
}

}  // namespace kv
