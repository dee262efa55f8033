// suggest.cpp — edit distance and the typo suggestions built on it.
#include "scenario/suggest.h"

#include <algorithm>
#include <numeric>

namespace kv {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the DP table: row[j] = distance(a[0..i), b[0..j)).
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  const std::size_t allowed = std::max<std::size_t>(1, (name.size() + 2) / 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += '"' + n + '"';
  }
  return out;
}

std::string suggestion_tail(std::string_view name, const std::vector<std::string>& candidates) {
  if (auto best = closest_name(name, candidates)) return "; did you mean \"" + *best + "\"?";
  return "; expected one of " + quoted_list(candidates);
}

}  // namespace kv
