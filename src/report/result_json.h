// result_json.h — the stable, versioned JSON export of one run (kResultSchema).
//
// Consumers (CI gates, dashboards, baselines) key on "schema": fields are only ever added within a
// schema version; renaming or removing one bumps it. Non-finite numbers are written as the strings
// "nan", "inf" and "-inf" so the document stays valid JSON.
#pragma once

#include "report/version.h"
#include <nlohmann/json.hpp>

#include "result/run_result.h"

namespace kv {

// 2: first_failure's "op" became "site" (result/check_sites.h) plus "ops", the ops behind it.
// Added within 2: verdict "error" with its "error" block (a backend crashed, exited, failed, hung);
// "device_info" (the CPU, and the GPU with its CUDA and driver versions); "coverage" and
// "coverage_gaps" (report/coverage.h) with the epochs' coverage counters.
inline constexpr const char* kResultSchema = "kvcheck.result/2";

nlohmann::json to_json(const Failure& f);
nlohmann::json to_json(const EpochStats& e);
nlohmann::json to_json(const BackendReport& b);
nlohmann::json to_json(const RunError& e);
nlohmann::json to_json(const DeviceInfo& d);
nlohmann::json to_json(const BuildIdentity& b);
nlohmann::json to_json(const RunResult& r);

// The document as written to disk and to stdout: two-space indent, trailing newline.
std::string dump_result(const nlohmann::json& doc);

}  // namespace kv
