// check_sites.h — where the checks look: each site is one kind of checked output row, named once,
// with the device ops (ops/op_table.h) whose output that row is. A failure names its site and
// so the ops that can be at fault; `kvcheck list` and the result schema print this table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_table.h"
#include "scenario/scenario.h"

namespace kv {

enum class CheckSite {
  decode,                    // attention layer, decode row
  prefill,                   // attention layer, prefill row of a sequence with no cached context
  prefill_with_context,      // attention layer, prefill row over cached context: the merge's row
  mla_decode,
  mla_prefill,
  mla_prefill_with_context,
  linear_attention_output,   // linear-attention layer row
  fp8_output,                // the batch-wide fp8 op's output of an attention or mla layer
  sampled_token,             // the token sampled from the logits of a row
};
inline constexpr std::size_t kNumCheckSites = 9;

struct CheckSiteInfo {
  CheckSite site;
  std::string_view name;
  std::string_view rows;           // one line: which rows are checked here
  std::vector<DeviceOp> ops;       // the ops whose output the row is, in the order they run
};

// In enum order: all_check_sites()[i].site == CheckSite(i).
const std::vector<CheckSiteInfo>& all_check_sites();
const CheckSiteInfo& site_info(CheckSite site);
std::string_view site_name(CheckSite site);
std::optional<CheckSite> find_check_site(std::string_view name);
std::vector<std::string> site_op_names(CheckSite site);  // the names of site_info(site).ops

// What a check compares, as the failure line and the result's first_failure.check name it.
enum class CheckKind {
  nonfinite,        // NaN/Inf in an output row, or NaN logits
  drift,            // relative L2 distance from the float64 reference above the tolerance
  token,            // the sampled token is not within the reference's near-tie margin
  epoch_agreement,  // a later epoch's token left epoch 1's path away from a near-tie
  op_drift,         // an op's output further from float64 over its own inputs than its bound
};
inline constexpr std::size_t kNumCheckKinds = 5;
std::string_view check_kind_name(CheckKind kind);

// The sites that have a drift check (against the reference, within a tolerance): the mixer
// outputs of attention, MLA and linear layers.
inline bool has_drift_check(CheckSite site) {
  return site != CheckSite::fp8_output && site != CheckSite::sampled_token;
}

// The sites the op checks judge (check/op_checker.h): the attention and MLA rows; linear
// attention is judged end to end only.
inline bool has_op_check(CheckSite site) {
  return has_drift_check(site) && site != CheckSite::linear_attention_output;
}

// The site of a layer's mixer output (the attention / linear-attention output before the fp8 op)
// for a row of a decode step or of a prefill chunk with or without cached context.
CheckSite mixer_site(LayerKind kind, bool is_decode, bool has_context);

}  // namespace kv
