// invocation.h — the process's command line as it was given, for the results to record (a
// result says how it was made: `kvcheck run ... --seed 7 --backend lib.so`).
#pragma once

#include <string>
#include <vector>

namespace kv::cli {

void set_command_line(int argc, const char* const* argv);
const std::vector<std::string>& command_line();

// The current time in UTC as ISO 8601 to the second: "2026-12-07T11:50:00Z".
std::string utc_timestamp();

}  // namespace kv::cli
