// suggest.h — "did you mean …?": the closest known name to a misspelt one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

// Levenshtein distance (insert, delete, substitute: cost 1 each), byte-wise.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name`, if it is close enough to be a plausible typo: within a third
// of the name's length, rounded up. Ties go to the first candidate.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);

// `"a", "b", "c"` — a list of choices for a message.
std::string quoted_list(const std::vector<std::string>& names);

// Either `; did you mean "x"?` or `; expected one of "a", "b"` — the tail of an error message.
std::string suggestion_tail(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace kv
