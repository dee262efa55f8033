// seed_list.cpp — parses `--seeds`.
#include "cli/seed_list.h"

#include <charconv>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace kv::cli {

namespace {

std::optional<uint64_t> parse_u64(const std::string& s) {
  uint64_t v = 0;
  if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::variant<std::vector<uint64_t>, std::string> parse_seed_list(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::set<uint64_t> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t dash = item.find('-', 1);
    const auto first = parse_u64(item.substr(0, dash));
    const auto last = dash == std::string::npos ? first : parse_u64(item.substr(dash + 1));
    if (!first || !last)
      return fmt::format("\"{}\" in \"{}\" is not a seed or a range FIRST-LAST of seeds "
                         "(non-negative integers, e.g. 1-20,33)",
                         item, text);
    if (*first > *last)
      return fmt::format("the range {} goes down: its first seed must not exceed its last", item);
    if (*last - *first >= kMaxSeeds || seeds.size() + (*last - *first) >= kMaxSeeds)
      return fmt::format("\"{}\" names more than {} seeds", text, kMaxSeeds);
    for (uint64_t s = *first;; ++s) {
      if (!seen.insert(s).second) return fmt::format("seed {} is named twice in \"{}\"", s, text);
      seeds.push_back(s);
      if (s == *last) break;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return seeds;
}

}  // namespace kv::cli
