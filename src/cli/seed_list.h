// seed_list.h — `--seeds 1-20,33`: a list of seeds, each run of a scenario once per seed.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kv::cli {

// Most seeds one --seeds may name (a typo such as 1-1000000 is refused, not run for a week).
inline constexpr size_t kMaxSeeds = 10'000;

// Comma-separated seeds and inclusive ranges FIRST-LAST (FIRST <= LAST), each a decimal integer
// in [0, 2^64); no seed twice. The seeds in the order written, or the reason it is refused.
std::variant<std::vector<uint64_t>, std::string> parse_seed_list(const std::string& text);

}  // namespace kv::cli
