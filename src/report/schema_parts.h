// schema_parts.h — the pieces kvcheck's output schemas are built from (report/result_schema.cpp,
// report/run_schema.cpp): a described schema, a closed object, a bounded integer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scenario/json_value.h"

namespace kv::schema_parts {

// `schema` with a "description" first.
inline Json described(std::string text, Json schema) {
  Json out{{"description", std::move(text)}};
  for (auto& [k, v] : schema.items()) out[k] = v;
  return out;
}

// An object of exactly these properties, each required unless named in `optional`.
inline Json object(Json properties, const std::vector<std::string>& optional = {}) {
  Json required = Json::array();
  for (const auto& [key, value] : properties.items())
    if (std::find(optional.begin(), optional.end(), key) == optional.end()) required.push_back(key);
  return Json{{"type", "object"},
              {"additionalProperties", false},
              {"required", required},
              {"properties", std::move(properties)}};
}

inline Json integer(int64_t minimum) { return Json{{"type", "integer"}, {"minimum", minimum}}; }

}  // namespace kv::schema_parts
