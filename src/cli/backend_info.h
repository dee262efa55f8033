// backend_info.h — what `kvcheck list --backend PATH` says about a plugin: who it is, what it
// declares (capabilities and conventions) and where each op would run.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plugin/backend_library.h"

namespace kv::cli {

nlohmann::json backend_json(const BackendLibrary& lib);
void print_backend(std::ostream& os, const BackendLibrary& lib);

}  // namespace kv::cli
