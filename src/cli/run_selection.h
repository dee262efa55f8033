// run_selection.h — which of a command line's scenarios a run takes: `-k PATTERN`, `--label L`,
// `--exclude-label L` on the files, then `--shard I/N` on the runs (each file x seed x repeat),
// so that N CI machines run disjoint parts whose union is the whole. A filter that matches
// nothing, or names a label no scenario carries, is bad input (exit 2) naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli/load_scenarios.h"

namespace kv::cli {

struct Shard {
  int32_t index = 1;  // 1-based
  int32_t count = 1;
};

// "I/N" with 1 <= I <= N <= 10,000, or why not.
std::variant<Shard, std::string> parse_shard(const std::string& text);

struct Selection {
  // -k: a scenario is kept when any pattern matches its path, its name or (in a suite) its run
  // id "<entry>::<path relative to the suite>": a shell glob
  // (fnmatch: * ? [...]) matching the whole, or, without glob characters, a substring.
  std::vector<std::string> keywords;
  std::vector<std::string> labels;    // --label: kept when it carries any of them
  std::vector<std::string> excluded;  // --exclude-label: dropped when it carries any of them
  bool empty() const { return keywords.empty() && labels.empty() && excluded.empty(); }
};

// Keeps the scenarios `sel` selects, in order. Returns the error for a label that no scenario of
// `scenarios` carries, or for a selection that keeps none.
std::optional<std::string> apply_selection(std::vector<LoadedScenario>& scenarios,
                                           const Selection& sel);

// The runs of shard `s`, in their order, given each run's estimated work: the heaviest run goes
// to the shard with the least work so far (ties: the lower index), so every shard's work is
// within the mean plus the largest run; the shards are disjoint and together hold every run.
std::vector<size_t> shard_members(const std::vector<double>& work, Shard s);

}  // namespace kv::cli
