// format_bytes.h — a size in binary units ("512 B", "3.4 KiB", "12.0 MiB", "1.50 GiB",
// "2.0 TiB"): how estimates, limits and progress print bytes everywhere in kvcheck.
#pragma once

#include <fmt/format.h>

#include <string>

namespace kv {

inline std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  if (u == 3) return fmt::format("{:.2f} {}", bytes, units[u]);
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

}  // namespace kv
