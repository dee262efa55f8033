// name_option.cpp — the name validators of name_option.h.
#include "cli/name_option.h"

#include "scenario/suggest.h"

namespace kv::cli {

CLI::Validator name_of(std::vector<std::pair<std::string, int>> table, std::string what) {
  std::vector<std::string> names;
  std::string desc;  // "{a,b,c}" in the help text
  for (const auto& [name, value] : table) {
    names.push_back(name);
    desc += (desc.empty() ? "{" : ",") + name;
  }
  desc += "}";
  return CLI::Validator(
      [table, names, what](std::string& input) {
        for (const auto& [name, value] : table)
          if (name == input) {
            input = std::to_string(value);
            return std::string();
          }
        return "unknown " + what + " \"" + input + "\"" + suggestion_tail(input, names);
      },
      desc, what);
}

CLI::Validator regression_name() {
  std::vector<std::pair<std::string, int>> table;
  for (const auto& r : all_regressions())
    table.emplace_back(std::string(r.name), static_cast<int>(r.id));
  return name_of(std::move(table), "regression");
}

}  // namespace kv::cli
