// format.h — how numbers and verdicts are spelled in kvcheck's human output and result JSON.
//
// One place, so the console table and the JSON never disagree on "nan" or on a verdict's name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/format_bytes.h"

#include "result/run_result.h"

namespace kv {

const char* verdict_name(Verdict v);  // "clean" / "corrupt" / "error"

// A JSON value for a double: the number when finite, else the string "nan", "inf" or "-inf"
// (JSON has no literal for them, and nlohmann would otherwise write null).
nlohmann::json json_number(double x);

// Human spellings: errors in scientific notation ("3.20e-03", "nan"), fractions as percent
// ("87.5%"), durations with a unit picked for readability ("850 us", "12.3 ms", "1.234 s").
std::string format_error_value(double x);
std::string format_percent(double fraction);
std::string format_duration(double seconds);
// Large counts with an SI suffix ("950", "12.3 k", "4.56 M", "7.8 G"), for estimates and progress
// (sizes: format_bytes, util/format_bytes.h).
std::string format_count(double n);

// The items with `sep` between them: join({"a", "b"}, ", ") is "a, b".
std::string join(const std::vector<std::string>& items, std::string_view sep);

}  // namespace kv
