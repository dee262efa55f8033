// regressions.h — the registry of named regression switches: each re-introduces one real class of KV-cache
// corruption inside the engine or an op (DESIGN.md §1). Off by default; set per scenario or with
// `kvcheck run --regression NAME`.
//
// A regression is named only at the edges (scenario files, the command line, reports); inside,
// a run carries a RegressionSet, a typed set over the Regression enum, parsed once.
#pragma once

#include <bitset>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/mechanisms.h"

namespace kv {

enum class Regression {
  merge_ignores_context_count,
  padded_rows_in_reduction,
  graph_metadata_not_persistent,
  new_blocks_not_zeroed,
  gather_assumes_contiguous,
};
inline constexpr std::size_t kNumRegressions = 5;

// Where a regression lives, so what a backend plugin can take out of its reach:
//   engine        the engine's own policy or its metadata (zeroing, the plan buffer, the amax
//                 rows): it applies whichever backend runs the ops
//   prefill_chain the engine's calls of its gather_kv -> varlen_attention -> merge_states chain for
//                 prefill rows: no effect where a backend's fused paged_prefill replaces the chain
enum class RegressionLevel { engine, prefill_chain };
const char* to_string(RegressionLevel l);

struct RegressionInfo {
  Regression id;
  std::string_view name;       // the switch as written in scenarios and on the command line
  std::string_view models;     // one line: what it does
  std::string_view bug_class;  // the seed / upstream fix it models
  RegressionLevel level;
  // The mechanisms a run must exercise for it to show (report/coverage.h names those it did not).
  std::vector<Mechanism> needs;
};

// In enum order: all_regressions()[i].id == Regression(i).
const std::vector<RegressionInfo>& all_regressions();
const RegressionInfo& regression_info(Regression r);
const RegressionInfo* find_regression(std::string_view name);
std::vector<std::string> regression_names();  // every registered name, in registry order

// The regressions a run switches on: what the scenario reader produces, the CLI replaces and the
// engine and ops consult.
class RegressionSet {
 public:
  RegressionSet() = default;
  RegressionSet(std::initializer_list<Regression> rs) {
    for (Regression r : rs) add(r);
  }
  explicit RegressionSet(const std::vector<Regression>& rs) {
    for (Regression r : rs) add(r);
  }
  bool has(Regression r) const { return bits_.test(index(r)); }
  void add(Regression r) { bits_.set(index(r)); }
  bool empty() const { return bits_.none(); }
  std::size_t size() const { return bits_.count(); }
  // The names, in registry order (for reports).
  std::vector<std::string> names() const;
  bool operator==(const RegressionSet&) const = default;

 private:
  static std::size_t index(Regression r) { return static_cast<std::size_t>(r); }
  std::bitset<kNumRegressions> bits_;
};

}  // namespace kv
