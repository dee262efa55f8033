// memory_fit.cpp — host memory probe, the budget's spelling, and the fit check with its message.
#include "cli/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "report/format.h"

namespace kv::cli {
namespace {

std::optional<int64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoll(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<int64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    int64_t kib = 0;
    if (words >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// The items that make up most of `need` (the biggest, and the next while the ones named cover
// less than 60% of it), as "lower A, B or C (the KV cache: 1.2 GiB)".
std::string what_to_lower(std::vector<MemoryItem> items, int64_t need) {
  std::sort(items.begin(), items.end(),
            [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  std::string text;
  int64_t named = 0;
  for (const MemoryItem& i : items) {
    if (i.fields.empty() || i.bytes <= 0) continue;
    if (!text.empty()) text += "; or ";
    text += fmt::format("{} (the {}: {})", i.fields, i.what, format_bytes(i.bytes));
    named += i.bytes;
    if (named >= 0.6 * need) break;
  }
  return text.empty() ? "" : ": lower " + text;
}

std::vector<MemoryItem> items_where(const RunCost& c, bool on_device) {
  std::vector<MemoryItem> out;
  for (const auto& i : c.memory)
    if (i.on_device == on_device) out.push_back(i);
  return out;
}

}  // namespace

std::optional<int64_t> host_available_bytes() {
  std::optional<int64_t> avail = mem_available();
  const auto max = read_number("/sys/fs/cgroup/memory.max");
  const auto current = read_number("/sys/fs/cgroup/memory.current");
  if (max && current) {
    const int64_t left = std::max<int64_t>(0, *max - *current);
    avail = avail ? std::min(*avail, left) : left;
  }
  return avail;
}

std::optional<std::string> memory_refusal(const std::string& scenario, const RunCost& cost,
                                          const MemoryLimits& limits) {
  const int64_t total = cost.total_bytes();
  const int64_t host = limits.device_is_host ? total : cost.host_bytes();
  if (limits.budget && total > *limits.budget)
    return fmt::format("{} needs about {} of memory (estimate; `kvcheck validate` itemises it), "
                       "above --max-memory {}{}",
                       scenario, format_bytes(total), format_bytes(*limits.budget),
                       what_to_lower(cost.memory, total - *limits.budget));
  if (limits.host_available && host > *limits.host_available) {
    std::vector<MemoryItem> items = cost.memory;
    if (!limits.device_is_host) items = items_where(cost, false);
    return fmt::format("{} needs about {} of host memory (estimate; `kvcheck validate` itemises "
                       "it) but this machine has {} available{}",
                       scenario, format_bytes(host), format_bytes(*limits.host_available),
                       what_to_lower(items, host - *limits.host_available));
  }
  if (limits.device_free && cost.device_bytes() > *limits.device_free) {
    // The host device could take it only if this machine has the memory for all of it.
    const bool host_could =
        limits.host_available && total <= *limits.host_available && !limits.budget.has_value();
    return fmt::format("{} needs about {} of device memory (estimate; `kvcheck validate` "
                       "itemises it) but the device has {} free{}{}",
                       scenario, format_bytes(cost.device_bytes()),
                       format_bytes(*limits.device_free),
                       what_to_lower(items_where(cost, true),
                                     cost.device_bytes() - *limits.device_free),
                       host_could ? fmt::format("; or run it on the host (--device host), which "
                                                "has {} available",
                                                format_bytes(*limits.host_available))
                                  : "");
  }
  return std::nullopt;
}

std::optional<int64_t> parse_memory_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  if (unit.size() == 3 && unit.ends_with("iB")) unit.resize(1);       // "GiB"
  else if (unit.size() == 2 && unit.back() == 'B') unit.resize(1);    // "GB"
  else if (unit == "B") unit.clear();
  double scale = 1;
  if (!unit.empty()) {
    static const std::string units = "KMGT";
    const auto k = units.find(static_cast<char>(std::toupper(unit[0])));
    if (unit.size() != 1 || k == std::string::npos) return std::nullopt;
    scale = std::pow(1024.0, static_cast<double>(k + 1));
  }
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > std::ldexp(1.0, 62)) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

}  // namespace kv::cli
