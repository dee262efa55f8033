// name_option.h — CLI11 validators built from kvcheck's own name tables, so that the command line
// spells an enum exactly as scenarios and reports do and re-types no list of names.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "scenario/enum_names.h"
#include "scenario/regressions.h"

namespace kv::cli {

// A name from `table` becomes its enum's integer (CLI11 binds an enum option from that), anything
// else is refused with `unknown <what> "x"; did you mean "y"?` or the list of valid names.
CLI::Validator name_of(std::vector<std::pair<std::string, int>> table, std::string what);

template <class E, std::size_t N>
CLI::Validator name_of(const std::array<EnumName<E>, N>& names, std::string what) {
  std::vector<std::pair<std::string, int>> table;
  for (const auto& e : names) table.emplace_back(std::string(e.name), static_cast<int>(e.value));
  return name_of(std::move(table), std::move(what));
}

// The regression registry's names.
CLI::Validator regression_name();

}  // namespace kv::cli
