// labels.h — what a label is: a tag that a scenario carries (its `labels`) for selecting runs
// (`kvcheck run --label L --exclude-label L`, `kvcheck list scenarios`): lower-case letters,
// digits, '-' and '_', starting with a letter or a digit, at most 40 bytes. One rule for the
// scenario reader, the command line and the JSON Schema (kLabelPattern).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kv {

inline constexpr std::size_t kMaxLabelBytes = 40;
inline constexpr const char* kLabelPattern = "^[a-z0-9][a-z0-9_-]{0,39}$";

// Why `label` is not one ("expected ..."), or nullopt when it is.
std::optional<std::string> label_problem(std::string_view label);

}  // namespace kv
