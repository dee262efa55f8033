// shipped_scenario.h — a scenario of the repository's scenarios/ folder, parsed, for tests that
// run one (the test fails, and an empty scenario comes back, if it does not parse).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "scenario/parse.h"

namespace kv::test {

inline Scenario shipped_scenario(const std::string& name) {
  auto parsed = load_scenario(std::string(KVCHECK_SOURCE_DIR) + "/scenarios/" + name);
  EXPECT_TRUE(std::holds_alternative<Scenario>(parsed)) << name;
  return std::holds_alternative<Scenario>(parsed) ? std::get<Scenario>(parsed) : Scenario{};
}

}  // namespace kv::test
