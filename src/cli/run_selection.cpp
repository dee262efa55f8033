// run_selection.cpp — -k, --label, --exclude-label and --shard.
#include "cli/run_selection.h"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "report/format.h"
#include "scenario/labels.h"

namespace kv::cli {

namespace {

bool has_glob(const std::string& p) { return p.find_first_of("*?[") != std::string::npos; }

bool matches(const std::string& pattern, const std::string& text) {
  if (!has_glob(pattern)) return text.find(pattern) != std::string::npos;
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool carries_any(const Scenario& s, const std::vector<std::string>& labels) {
  return std::any_of(labels.begin(), labels.end(), [&](const std::string& l) {
    return std::find(s.labels.begin(), s.labels.end(), l) != s.labels.end();
  });
}

std::optional<int32_t> parse_int(std::string_view t) {
  int32_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::variant<Shard, std::string> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const std::string expected = "expected I/N, shard I of N with 1 <= I <= N <= 10000 (e.g. 2/4)";
  if (slash == std::string::npos) return fmt::format("got \"{}\", {}", text, expected);
  const auto i = parse_int(std::string_view(text).substr(0, slash));
  const auto n = parse_int(std::string_view(text).substr(slash + 1));
  if (!i || !n || *n < 1 || *n > 10000 || *i < 1 || *i > *n)
    return fmt::format("got \"{}\", {}", text, expected);
  return Shard{.index = *i, .count = *n};
}

std::optional<std::string> apply_selection(std::vector<LoadedScenario>& scenarios,
                                           const Selection& sel) {
  if (sel.empty()) return std::nullopt;
  std::set<std::string> known;
  for (const auto& l : scenarios) known.insert(l.scenario.labels.begin(), l.scenario.labels.end());
  for (const auto* list : {&sel.labels, &sel.excluded})
    for (const std::string& label : *list) {
      const char* option = list == &sel.labels ? "--label" : "--exclude-label";
      if (auto why = label_problem(label))
        return fmt::format("{} {}: {}", option, label, *why);
      if (!known.count(label))
        return fmt::format("{} {}: no scenario of the run carries this label ({})", option,
                           label,
                           known.empty() ? "none carries any"
                                         : "labels here: " + join(std::vector<std::string>(
                                                                      known.begin(), known.end()),
                                                                  ", "));
    }
  const size_t before = scenarios.size();
  std::erase_if(scenarios, [&](const LoadedScenario& l) {
    const bool keyword =
        sel.keywords.empty() ||
        std::any_of(sel.keywords.begin(), sel.keywords.end(), [&](const std::string& k) {
          return matches(k, l.path) || matches(k, l.scenario.name) ||
                 (!l.run_id.empty() && matches(k, l.run_id));
        });
    const bool label = sel.labels.empty() || carries_any(l.scenario, sel.labels);
    return !keyword || !label || carries_any(l.scenario, sel.excluded);
  });
  if (!scenarios.empty()) return std::nullopt;
  std::vector<std::string> filters;
  for (const auto& k : sel.keywords) filters.push_back("-k " + k);
  for (const auto& l : sel.labels) filters.push_back("--label " + l);
  for (const auto& l : sel.excluded) filters.push_back("--exclude-label " + l);
  return fmt::format("{} selects none of the {} scenario(s) given", join(filters, " "), before);
}

std::vector<size_t> shard_members(const std::vector<double>& work, Shard s) {
  std::vector<size_t> order(work.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Heaviest first; equal work in run order, so the split is the same on every machine.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return work[a] > work[b]; });
  std::vector<double> load(static_cast<size_t>(s.count), 0.0);
  std::vector<size_t> mine;
  for (size_t run : order) {
    const size_t lightest =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[lightest] += std::max(work[run], 0.0);
    if (lightest == static_cast<size_t>(s.index - 1)) mine.push_back(run);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace kv::cli
