// parse.h — read a scenario file (format version 1) into a validated Scenario.
//
// Bad input never throws and never half-succeeds: the result is either a Scenario whose every
// invariant (scenario.h) holds, or the first error found, located by a JSON pointer. Errors are
// reported in document order; cross-field checks run after every field has read cleanly. A
// std::logic_error (a broken invariant of kvcheck's own, not bad input) passes through. A value
// spelt as the format used to is read as today's and listed in Scenario::old_spellings
// (old_spellings.h).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

struct ScenarioError {
  std::string pointer;  // JSON pointer of the offending value ("" = the document itself)
  std::string message;  // what was found and what was expected
};

std::variant<Scenario, ScenarioError> parse_scenario(std::string_view text,
                                                     std::string source_path);
std::variant<Scenario, ScenarioError> load_scenario(const std::string& path);

// The same with `--set` settings (field_setting.h) written into the document before its fields
// are read: a setting is judged as if the file had it.
struct FieldSetting;
std::variant<Scenario, ScenarioError> parse_scenario(std::string_view text,
                                                     std::string source_path,
                                                     const std::vector<FieldSetting>& settings);
std::variant<Scenario, ScenarioError> load_scenario(const std::string& path,
                                                    const std::vector<FieldSetting>& settings);

// "scenarios/x.json: /cache/block_size: got 0, expected an integer from 1 to 256".
std::string format_error(const ScenarioError& error, const std::string& path);

// Every key the parser accepts, per object: "" (the top level), "/model", "/engine/cuda_graphs", …
// Keys are listed in the order the format documents them.
std::map<std::string, std::vector<std::string>> known_scenario_keys();

}  // namespace kv
