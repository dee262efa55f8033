// check_sites.cpp — the site table.
#include "result/check_sites.h"

namespace kv {

const std::vector<CheckSiteInfo>& all_check_sites() {
  using enum DeviceOp;
  using S = CheckSite;
  static const std::vector<CheckSiteInfo> sites = {
      // The decode multiplies P·V over the whole last tile (as FlashMLA-style kernels do), so it
      // reads the bytes fill_blocks left in the unwritten slots of a new block (seed 000).
      {S::decode, "decode", "attention layers: decode rows", {fill_blocks, write_kv, paged_decode}},
      {S::prefill, "prefill",
       "attention layers: prefill rows of sequences without cached context (causal attention, "
       "copied through the merge)",
       {write_kv, varlen_attention, merge_states, paged_prefill}},
      {S::prefill_with_context, "prefill_with_context",
       "attention layers: prefill rows over cached context (gather, context and causal "
       "attention, merged by LSE)",
       {write_kv, gather_kv, varlen_attention, merge_states, paged_prefill}},
      // Likewise MLA's decode.
      {S::mla_decode, "mla_decode",
       "mla layers: decode rows over the latent cache, after the per-head up-projection",
       {fill_blocks, write_kv, paged_decode, linear}},
      {S::mla_prefill, "mla_prefill",
       "mla layers: prefill rows of sequences without cached context",
       {write_kv, varlen_attention, merge_states, paged_prefill, linear}},
      {S::mla_prefill_with_context, "mla_prefill_with_context",
       "mla layers: prefill rows over cached context",
       {write_kv, gather_kv, varlen_attention, merge_states, paged_prefill, linear}},
      {S::linear_attention_output, "linear_attention_output",
       "linear layers: every row (the recurrent state lives in pool blocks)",
       {linear_attention}},
      {S::fp8_output, "fp8_output",
       "attention and mla layers: the batch-wide fp8 op's output of every real row",
       {quant_fp8}},
      {S::sampled_token, "sampled_token",
       "the token sampled at a sequence's last row: NaN logits, the reference's margin, and "
       "agreement with epoch 1",
       {embed, rms_norm, linear, argmax}},
  };
  return sites;
}

const CheckSiteInfo& site_info(CheckSite site) {
  return all_check_sites().at(static_cast<size_t>(site));
}

std::string_view site_name(CheckSite site) { return site_info(site).name; }

std::optional<CheckSite> find_check_site(std::string_view name) {
  for (const auto& s : all_check_sites())
    if (s.name == name) return s.site;
  return std::nullopt;
}

std::vector<std::string> site_op_names(CheckSite site) {
  std::vector<std::string> names;
  for (DeviceOp op : site_info(site).ops) names.emplace_back(op_name(op));
  return names;
}

std::string_view check_kind_name(CheckKind kind) {
  static constexpr std::string_view names[kNumCheckKinds] = {"nonfinite", "drift", "token",
                                                             "epoch_agreement", "op_drift"};
  return names[static_cast<size_t>(kind)];
}

CheckSite mixer_site(LayerKind kind, bool is_decode, bool has_context) {
  switch (kind) {
    case LayerKind::linear: return CheckSite::linear_attention_output;
    case LayerKind::mla:
      if (is_decode) return CheckSite::mla_decode;
      return has_context ? CheckSite::mla_prefill_with_context : CheckSite::mla_prefill;
    case LayerKind::attention: break;
  }
  if (is_decode) return CheckSite::decode;
  return has_context ? CheckSite::prefill_with_context : CheckSite::prefill;
}

}  // namespace kv
