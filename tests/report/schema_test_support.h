// schema_test_support.h — what the schema tests share: a committed schema file's text, and an
// object's keys (sorted) to compare with the fields the writer emits.
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kv {

// scenarios/schema/<file> as committed.
inline std::string committed_schema(const std::string& file) {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/scenarios/schema/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> keys_of(const nlohmann::json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace kv
