// format.cpp — number and verdict spellings shared by the console table and the result JSON.
#include "report/format.h"

#include <cmath>

#include <fmt/format.h>

namespace kv {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::clean: return "clean";
    case Verdict::corrupt: return "corrupt";
    case Verdict::error: return "error";
  }
  return "error";
}

static const char* nonfinite_name(double x) {
  if (std::isnan(x)) return "nan";
  return x > 0 ? "inf" : "-inf";
}

nlohmann::json json_number(double x) {
  if (std::isfinite(x)) return x;
  return nonfinite_name(x);
}

std::string format_error_value(double x) {
  if (!std::isfinite(x)) return nonfinite_name(x);
  if (x == 0.0) return "0";
  return fmt::format("{:.2e}", x);
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return nonfinite_name(fraction);
  return fmt::format("{:.1f}%", fraction * 100.0);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return nonfinite_name(seconds);
  if (seconds < 1e-3) return fmt::format("{:.0f} us", seconds * 1e6);
  if (seconds < 1.0) return fmt::format("{:.1f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

std::string format_count(double n) {
  static const char* const units[] = {"", " k", " M", " G", " T", " P"};
  int u = 0;
  while (std::fabs(n) >= 1000.0 && u < 5) {
    n /= 1000.0;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f}", n);
  if (n < 10) return fmt::format("{:.2f}{}", n, units[u]);
  if (n < 100) return fmt::format("{:.1f}{}", n, units[u]);
  return fmt::format("{:.0f}{}", n, units[u]);
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) s += sep;
    s += items[i];
  }
  return s;
}

}  // namespace kv
