// parse_ok.h — the scenario tests' parse that must succeed: the parsed scenario, or a test
// failure naming the error (and the text), and an empty scenario.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "scenario/parse.h"

namespace kv {

inline Scenario parse_ok(std::string_view text, std::string path = "") {
  auto r = parse_scenario(text, std::move(path));
  if (auto* e = std::get_if<ScenarioError>(&r)) {
    ADD_FAILURE() << format_error(*e, "<text>") << "\n" << text;
    return {};
  }
  return std::get<Scenario>(r);
}

}  // namespace kv
