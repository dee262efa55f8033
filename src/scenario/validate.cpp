// validate.cpp — cross-field validation of a scenario.
#include "scenario/validate.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "kernels/block_count.cuh"

namespace kv {
namespace {


bool present(const Json& doc, const std::string& pointer) {
  return doc.contains(Json::json_pointer(pointer));
}

// "got 64" for a value the file sets, "got 64 (the default)" for one it leaves out; `shown` is the
// value as the file would spell it.
std::string got(const Json& doc, const std::string& pointer, const std::string& shown) {
  return "got " + shown + (present(doc, pointer) ? "" : " (the default)");
}

std::string got(const Json& doc, const std::string& pointer, int64_t value) {
  return got(doc, pointer, std::to_string(value));
}

std::string quoted(const char* name) { return fmt::format("\"{}\"", name); }

// Of two fields in conflict, blame the one the user wrote; the first if both or neither.
std::string blame(const Json& doc, const std::string& first, const std::string& second) {
  return !present(doc, first) && present(doc, second) ? second : first;
}

std::optional<std::size_t> first_layer(const ModelSpec& m, LayerKind kind) {
  const auto it = std::find(m.layers.begin(), m.layers.end(), kind);
  if (it == m.layers.end()) return std::nullopt;
  return static_cast<std::size_t>(it - m.layers.begin());
}

std::string layer_pointer(std::size_t index) { return child_pointer("/model/layers", index); }

void validate_model(const ModelSpec& m, const Json& doc) {
  if (!first_layer(m, LayerKind::mla)) {
    for (const char* key : {"kv_lora_rank", "qk_rope_dim"}) {
      const std::string p = child_pointer("/model", key);
      if (present(doc, p))
        fail(p, fmt::format("got {}, but {} only applies to mla layers; the model has none",
                            describe(doc.at(Json::json_pointer(p))), key));
    }
  }

  if (m.num_q_heads % m.num_kv_heads != 0) {
    const std::string p = blame(doc, "/model/num_kv_heads", "/model/num_q_heads");
    if (p == "/model/num_kv_heads")
      fail(p, fmt::format("{}, but num_q_heads = {} is not a multiple of it (each KV head serves "
                          "a whole group of query heads)",
                          got(doc, p, m.num_kv_heads), m.num_q_heads));
    fail(p, fmt::format("{}, expected a multiple of num_kv_heads = {}", got(doc, p, m.num_q_heads),
                        m.num_kv_heads));
  }
}

void validate_scales(const CacheSpec& c, const Json& doc) {
  const bool has_k = present(doc, "/cache/k_scale"), has_v = present(doc, "/cache/v_scale");
  if (c.dtype == DType::fp8_e4m3) {
    // Any scale: the synthetic model makes its constant features power-of-two multiples of the
    // scales, so they read back exactly (model_weights.h).
    if (has_k && has_v) return;
    const std::string missing = !has_k && !has_v ? "cache.k_scale and cache.v_scale are"
                                : !has_k         ? "cache.k_scale is"
                                                 : "cache.v_scale is";
    fail("/cache/dtype",
         fmt::format("got \"fp8_e4m3\", but {} missing: an fp8 cache stores value / scale, so it "
                     "needs both k_scale and v_scale",
                     missing));
  }
  for (const char* key : {"k_scale", "v_scale"}) {
    const std::string p = child_pointer("/cache", key);
    if (present(doc, p))
      fail(p, fmt::format("got {}, but cache.dtype is {}{}: only an fp8_e4m3 cache stores value / "
                          "scale; remove {} or set the dtype to \"fp8_e4m3\"",
                          describe(doc.at(Json::json_pointer(p))), quoted(to_string(c.dtype)),
                          present(doc, "/cache/dtype") ? "" : " (the default)", key));
  }
}

// The hybrid pool (scenario.h): linear layers need it, it needs a linear layer, and the attention
// layers that share its blocks must keep a block's K and V together. Prefix caching is fine:
// hits recompute the linear layers' state (scheduler.h).
void validate_pool(const Scenario& s, const Json& doc) {
  const auto linear = first_layer(s.model, LayerKind::linear);
  const auto attention = first_layer(s.model, LayerKind::attention);
  const bool hybrid = s.cache.pool == PoolKind::hybrid;
  if (linear && !hybrid)
    fail(layer_pointer(*linear),
         fmt::format("layer kind \"linear\" needs cache.pool \"hybrid\", {}: linear-attention "
                     "state lives in blocks of the shared pool; set cache.pool to \"hybrid\"",
                     got(doc, "/cache/pool", quoted(to_string(s.cache.pool)))));
  if (hybrid && !linear)
    fail("/cache/pool",
         fmt::format("got \"hybrid\", but the model has no \"linear\" layer: a hybrid pool "
                     "shares its blocks between linear-attention state and KV, so there is "
                     "nothing to share; use {}",
                     quoted(to_string(PoolKind::per_layer))));
  if (hybrid && attention && s.cache.layout != KvLayout::kv_interleaved)
    fail("/cache/layout",
         fmt::format("{}, but a hybrid pool keeps K and V of a block together ({} is an "
                     "attention layer): use {}",
                     got(doc, "/cache/layout", quoted(to_string(s.cache.layout))),
                     layer_pointer(*attention), quoted(to_string(KvLayout::kv_interleaved))));
}

void validate_engine(const EngineSpec& e, const Json& doc) {
  const GraphSpec& g = e.cuda_graphs;
  const std::string sizes = "/engine/cuda_graphs/capture_sizes";
  for (std::size_t i = 0; i < g.capture_sizes.size(); ++i) {
    const int32_t size = g.capture_sizes[i];
    if (i > 0 && size <= g.capture_sizes[i - 1])
      fail(child_pointer(sizes, i),
           fmt::format("got {} after {}, expected ascending sizes with no repeats", size,
                       g.capture_sizes[i - 1]));
    if (size > e.max_running_requests)
      fail(child_pointer(sizes, i),
           fmt::format("capture size {} is above engine.max_running_requests = {}{} (a batch "
                       "never has more rows than that)",
                       size, e.max_running_requests,
                       present(doc, "/engine/max_running_requests") ? "" : " (the default)"));
  }
  if (g.mode == GraphMode::decode && g.capture_sizes.empty())
    fail(blame(doc, sizes, "/engine/cuda_graphs/mode"),
         "mode \"decode\" needs at least one capture size in engine.cuda_graphs.capture_sizes");
}

void validate_workload(const WorkloadSpec& w, const Json& doc) {
  const int64_t longest = int64_t{w.prompt_len.max} + w.new_tokens.max;
  if (longest > kMaxRequestTokens)
    fail(blame(doc, "/workload/new_tokens", "/workload/prompt_len"),
         fmt::format("the longest request (prompt {} + {} new tokens) has {} tokens, above the "
                     "limit of {}",
                     w.prompt_len.max, w.new_tokens.max, longest, kMaxRequestTokens));

  if (w.prefix_groups > 0 && w.shared_prefix_len > w.prompt_len.min)
    fail("/workload/shared_prefix_len",
         fmt::format("{}, but prompt_len.min = {}: every prompt starts with its group's shared "
                     "prefix, so the prefix must fit in the shortest prompt",
                     got(doc, "/workload/shared_prefix_len", w.shared_prefix_len),
                     w.prompt_len.min));
}

// The pool must hold at least the longest request on its own, or the scheduler could never run
// it, not even alone after preempting everything else. With a linear layer a running request also
// holds one block of recurrent state.
void validate_capacity(const Scenario& s, const Json& doc) {
  const int64_t tokens = int64_t{s.workload.prompt_len.max} + s.workload.new_tokens.max;
  const int64_t kv_blocks = blocks_for_tokens(tokens, s.cache.block_size);
  const bool state_block = first_layer(s.model, LayerKind::linear).has_value();
  const int64_t usable = int64_t{s.cache.num_blocks} - 1;  // block 0 is the null block
  if (usable < kv_blocks + (state_block ? 1 : 0))
    fail("/cache/num_blocks",
         fmt::format("{}, but the longest request (prompt {} + {} new tokens) needs {} blocks of "
                     "{}{} plus the null block",
                     got(doc, "/cache/num_blocks", s.cache.num_blocks),
                     s.workload.prompt_len.max, s.workload.new_tokens.max, kv_blocks,
                     s.cache.block_size,
                     state_block ? " plus 1 block of linear-attention state" : ""));
}

// sampled_requests sizes the sample of the sampled reference; with the full reference every
// request is checked, so a count there would silently mean nothing.
void validate_checks(const CheckSpec& c, const Json& doc) {
  const std::string p = "/checks/sampled_requests";
  if (c.reference == ReferenceMode::full && present(doc, p))
    fail(p, fmt::format("got {}, but checks.reference is \"full\"{}: every request is checked "
                        "against the reference, so there is no sample to size; remove "
                        "sampled_requests or set checks.reference to \"sampled\" or \"auto\"",
                        describe(doc.at(Json::json_pointer(p))),
                        present(doc, "/checks/reference") ? "" : " (the default)"));
}

// A site tolerance for rows the model never produces would silently mean nothing.
void validate_site_tolerances(const Scenario& s, const Json& doc) {
  for (const SiteToleranceKey& key : kSiteToleranceKeys) {
    if (!(s.checks.site_tolerances.*key.member) || first_layer(s.model, key.kind)) continue;
    const std::string p = child_pointer("/checks/site_tolerances", key.name);
    fail(p, fmt::format("got {}, but {} rows come from {} layers and model.layers has none",
                        describe(doc.at(Json::json_pointer(p))), key.name,
                        to_string(key.kind)));
  }
}

}  // namespace

void validate_scenario(const Scenario& s, const Json& doc) {
  validate_model(s.model, doc);
  validate_scales(s.cache, doc);
  validate_pool(s, doc);
  validate_engine(s.engine, doc);
  validate_workload(s.workload, doc);
  validate_capacity(s, doc);
  validate_checks(s.checks, doc);
  validate_site_tolerances(s, doc);
}

}  // namespace kv
