// regressions.h — the registry of named regression switches: each re-introduces one real class of KV-cache
// corruption inside the engine or an op (DESIGN.md §1). Off by default; set per scenario or with
// `kvcheck run --regression NAME`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kv {

enum class Regression {
  merge_ignores_context_count,
  padded_rows_in_reduction,
  graph_metadata_not_persistent,
  new_blocks_not_zeroed,
  gather_assumes_contiguous,
};

struct RegressionInfo {
  Regression id;
  std::string_view name;       // the switch as written in scenarios and on the command line
  std::string_view models;     // one line: what it does
  std::string_view bug_class;  // the seed / upstream fix it models
};

const std::vector<RegressionInfo>& all_regressions();
const RegressionInfo* find_regression(std::string_view name);

// The set a run uses, as flags: what the engine and the ops consult.
struct RegressionSet {
  bool merge_ignores_context_count = false;
  bool padded_rows_in_reduction = false;
  bool graph_metadata_not_persistent = false;
  bool new_blocks_not_zeroed = false;
  bool gather_assumes_contiguous = false;

  // Names must be valid (the scenario parser and the CLI check them first).
  static RegressionSet from_names(const std::vector<std::string>& names);
};

}  // namespace kv
