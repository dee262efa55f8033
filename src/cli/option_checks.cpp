// option_checks.cpp — the shared validators of option_checks.h.
#include "cli/option_checks.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "scenario/labels.h"

namespace kv::cli {

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("expected a path, got ''") : ""; },
      "PATH", "non-empty path");
}

CLI::Validator label_text() {
  return CLI::Validator(
      [](std::string& v) {
        auto why = label_problem(v);
        return why ? *why + ", got \"" + v + "\"" : std::string();
      },
      "L", "label");
}

namespace {

// Whether `s` is not empty and all of it reads as one T.
template <class T>
bool reads_whole(const std::string& s, T& v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

CLI::Validator uint64_text() {
  return CLI::Validator(
      [](std::string& s) {
        uint64_t v = 0;
        if (!reads_whole(s, v))
          return "expected an integer from 0 to 18446744073709551615, got " + s;
        return std::string();
      },
      "", "UINT64");
}

CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& s) {
        double v = 0.0;
        if (!reads_whole(s, v) || !std::isfinite(v) || !(v > 0.0))
          return "expected a finite number above 0 (e.g. 1e-5), got " + s;
        return std::string();
      },
      "", "positive finite number");
}

}  // namespace kv::cli
