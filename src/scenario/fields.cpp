// fields.cpp — the scenario field table (format version 1): every key with its reader, range,
// default and doc (builders in field_table_builders.h), and the reader that walks it.
#include "scenario/fields.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "scenario/field_table.h"
#include "scenario/field_table_builders.h"
#include "backend/abi_tensor.h"
#include "scenario/labels.h"
#include "scenario/regressions.h"
#include "scenario/suggest.h"

namespace kv {
namespace {

using namespace field_table;

constexpr int32_t kMaxLayers = 64;
// Query and KV heads per layer. No op limits the head count below this: CUDA's MLA decode takes
// heads in blocks of 64 (a row of 128 is two CTAs), its GQA tensor-core decode takes up to 8 q
// heads per KV head (the generic path any ratio), the other kernels put heads on a grid axis or a
// grid-stride loop, and the host ops loop. 256 is a size limit like hidden_size's: twice the
// largest production head count (128), so a scenario cannot ask for weights of absurd size.
constexpr int32_t kMaxHeads = 256;
constexpr int32_t kMaxCaptureSize = 4096;
constexpr int32_t kMaxInt = std::numeric_limits<int32_t>::max();

// ---- values with more structure than one builder ----

std::vector<LayerKind> read_layer_kinds(const Json& v, const std::string& p, std::size_t min_size,
                                        bool unique) {
  const auto& items = read_array(v, p, "layer kinds", min_size, kMaxLayers);
  std::vector<LayerKind> kinds;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const LayerKind k = read_enum(items[i], child_pointer(p, i), kLayerKindNames);
    if (unique && std::find(kinds.begin(), kinds.end(), k) != kinds.end())
      fail(child_pointer(p, i), fmt::format("\"{}\" is listed twice", to_string(k)));
    kinds.push_back(k);
  }
  return kinds;
}

Json layer_kind_names(const std::vector<LayerKind>& kinds) {
  Json names = Json::array();
  for (LayerKind k : kinds) names.push_back(to_string(k));
  return names;
}

ValueForm layer_kinds_form(std::size_t min_size, bool unique) {
  return array_form(choice_form(enum_names(kLayerKindNames)), min_size, kMaxLayers, unique);
}

void read_layers(const Json& v, const std::string& p, ModelSpec& out) {
  if (v.is_number()) {  // n attention layers
    out.layers.assign(static_cast<std::size_t>(read_int(v, p, 1, kMaxLayers)),
                      LayerKind::attention);
    return;
  }
  if (!v.is_array())
    fail(p, fmt::format("got {}, expected a layer count from 1 to {} or an array of layer kinds "
                        "({})",
                        describe(v), kMaxLayers, quoted_list(enum_names(kLayerKindNames))));
  out.layers = read_layer_kinds(v, p, 1, /*unique=*/false);
}

void read_capture_sizes(const Json& v, const std::string& p, GraphSpec& out) {
  const auto& items = read_array(v, p, "capture sizes", 0, kMaxCaptureSize);
  out.capture_sizes.clear();
  for (std::size_t i = 0; i < items.size(); ++i)
    out.capture_sizes.push_back(read_int(items[i], child_pointer(p, i), 1, kMaxCaptureSize));
}

void read_regressions(const Json& v, const std::string& p, Scenario& out) {
  // No length limit: a name may appear once, so the registry bounds the length.
  const auto& items = read_array(v, p, "regression names", 0, SIZE_MAX);
  RegressionSet set;
  std::vector<std::string> seen;  // in document order, for the "listed twice" pointer
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string item = child_pointer(p, i);
    const std::string name = read_string(items[i], item);
    const RegressionInfo* r = find_regression(name);
    if (!r)
      fail(item, "unknown regression \"" + name + "\"" +
                     suggestion_tail(name, regression_names()));
    const auto first = std::find(seen.begin(), seen.end(), name);
    if (first != seen.end())
      fail(item, fmt::format("regression \"{}\" is listed twice (first at {})", name,
                             child_pointer(p, first - seen.begin())));
    seen.push_back(name);
    set.add(r->id);
  }
  out.regressions = set;
}

void read_format(const Json& v, const std::string& p, Scenario& out) {
  if (!(v.is_number() && v == kScenarioFormat))  // 1.0 == 1, as for every integer
    fail(p, fmt::format("got {}, expected {} (the only format version this build reads)",
                        describe(v), kScenarioFormat));
  out.format = kScenarioFormat;
}

ValueForm format_form() {
  ValueForm f = plain_form(ValueForm::Kind::constant);
  f.constant = kScenarioFormat;
  return f;
}

// A relative L2 tolerance in (0, 1), or nothing (the calibrated table's).
template <class T>
Field<T> tolerance_field(std::string_view key, std::optional<double> T::*member,
                         std::string_view doc) {
  constexpr double lo = 0.0, hi = 1.0;
  ValueForm form = plain_form(ValueForm::Kind::number);
  form.minimum = lo;
  form.maximum = hi;
  form.exclusive_minimum = form.exclusive_maximum = true;
  return no_default(
      Field<T>{.key = key,
               .read = [=](const Json& v, const std::string& p, T& out) {
                 out.*member = read_number_between(v, p, lo, hi);
               },
               .value_of = [=](const T& t) { return t.*member ? Json(*(t.*member)) : Json(); },
               .forms = {form},
               .doc = doc},
      "calibrated per site");
}

const Fields<SiteToleranceSpec>& site_tolerance_fields() {
  using S = SiteToleranceSpec;
  static const Fields<S> f = {
      tolerance_field("decode", &S::decode, "Attention decode rows."),
      tolerance_field("prefill", &S::prefill, "Attention prefill rows without cached context."),
      tolerance_field("prefill_with_context", &S::prefill_with_context,
                      "Attention prefill rows over cached context."),
      tolerance_field("mla_decode", &S::mla_decode, "MLA decode rows."),
      tolerance_field("mla_prefill", &S::mla_prefill, "MLA prefill rows without cached context."),
      tolerance_field("mla_prefill_with_context", &S::mla_prefill_with_context,
                      "MLA prefill rows over cached context."),
      tolerance_field("linear_attention_output", &S::linear_attention_output,
                      "Linear-attention rows."),
  };
  return f;
}

// The name is shown in tables, JUnit reports and results, with ".seed<N>", ".repeat<K>" and
// ".clean" appended for the runs of one file (the result file is named after the file).
constexpr std::size_t kMaxNameBytes = 200;

Field<Scenario> name_field() {
  ValueForm form = plain_form(ValueForm::Kind::string);
  form.min_length = 1;
  form.max_length = kMaxNameBytes;
  return {.key = "name",
          .read = [](const Json& v, const std::string& p, Scenario& out) {
            out.name = read_string(v, p);
            if (out.name.empty()) fail(p, "got \"\" (a string), expected a non-empty name");
            if (out.name.size() > kMaxNameBytes)
              fail(p, fmt::format("got a name of {} bytes, expected at most {} (a name is "
                                  "for tables and reports; the file's path says where it is)",
                                  out.name.size(), kMaxNameBytes));
          },
          .value_of = [](const Scenario& s) { return Json(s.name); },
          .forms = {form},
          .doc = "Name shown in reports."};
}

// ---- the table ----

const Fields<ModelSpec>& model_fields() {
  static const Fields<ModelSpec> f = {
      {.key = "layers",
       .read = read_layers,
       .value_of = [](const ModelSpec& m) { return layer_kind_names(m.layers); },
       .forms = {integer_form(1, kMaxLayers), layer_kinds_form(1, false)},
       .doc = "The layers in order; a number *n* means *n* attention layers. `attention`: GQA "
              "over a paged K/V cache; `mla`: multi-head latent attention over a one-head latent "
              "cache (FlashMLA-like whole-tile P·V); `linear`: gated linear attention with one "
              "block of recurrent state per request (needs `cache.pool` `\"hybrid\"`)."},
      integer("num_q_heads", &ModelSpec::num_q_heads, 1, kMaxHeads,
              "Query heads per layer; a multiple of `num_kv_heads`. Up to 256, twice the largest "
              "production count (128: DeepSeek-V3's MLA, Llama-3.1-405B's GQA)."),
      integer("num_kv_heads", &ModelSpec::num_kv_heads, 1, kMaxHeads,
              "Key/value heads per layer (grouped-query attention when fewer than "
              "`num_q_heads`)."),
      integer("head_dim", &ModelSpec::head_dim, 1, 256, "Size of one head."),
      integer("hidden_size", &ModelSpec::hidden_size, 1, 4096,
              "Width of the hidden state (the residual stream)."),
      integer("vocab_size", &ModelSpec::vocab_size, 2, 65536,
              "Vocabulary of the tiny LM head; generated tokens are greedy picks from it."),
      seed("weight_seed", &ModelSpec::weight_seed, "Seed of the synthetic weights."),
      integer("kv_lora_rank", &ModelSpec::kv_lora_rank, 2, 1024,
              "`mla` layers only (an error without one): latent features cached per token; "
              "every head's V lives in them. At least 2: latent feature 0 is a constant the "
              "model reserves.",
              "latent feature 0 is a constant the model reserves, so at least 2"),
      integer("qk_rope_dim", &ModelSpec::qk_rope_dim, 0, 256,
              "`mla` layers only (an error without one): the decoupled positional key, cached "
              "per token after the latent and shared by all heads."),
  };
  return f;
}

const Fields<CacheSpec>& cache_fields() {
  static const Fields<CacheSpec> f = {
      integer("num_blocks", &CacheSpec::num_blocks, 2, 1'000'000,
              "Blocks in the pool, including the reserved null block 0. Must hold the longest "
              "request alone: `ceil((prompt_len.max + new_tokens.max) / block_size) + 1`, plus 1 "
              "with a `linear` layer (the request's state block)."),
      integer("block_size", &CacheSpec::block_size, 1, 256, "Tokens per block."),
      choice("dtype", &CacheSpec::dtype, kCacheDTypeNames,
             "Storage type of K and V (of the latent in `mla` layers); the reference rounds K/V "
             "the same way. `fp8_e4m3` stores value / scale and needs `k_scale` and `v_scale`."),
      choice("layout", &CacheSpec::layout, kKvLayoutNames, kKvLayoutOldNames,
             "`kv_separate`: K and V in regions of their own; `kv_interleaved`: per block "
             "`[K0][V0][K1][V1]…`, addressed through strides (the hybrid-model layout of seed "
             "004). The names are the backend ABI's (`KVCHECK_LAYOUT_KV_SEPARATE`, ...)."),
      choice("pool", &CacheSpec::pool, kPoolKindNames, kPoolKindOldNames,
             "`per_layer`: every layer has a cache buffer of its own. `hybrid`: the j-th "
             "attention-like (`attention`/`mla`) layer and the j-th `linear` layer share one "
             "buffer, and a block id holds either KV or one request's linear-attention state, so "
             "a block freed by one is read byte for byte by the other (the Kimi-Linear "
             "arrangement of seed 000). Needs a `linear` layer, and `layout` "
             "`\"kv_interleaved\"` with an `attention` layer."),
      no_default(scale("k_scale", &CacheSpec::k_scale,
                       "Dequantisation scale of K (of the latent in `mla` layers): the cache "
                       "stores K / `k_scale`. Any calibrated value (e.g. 0.0173); only with "
                       "`dtype` `\"fp8_e4m3\"`."),
                 "none; required with `dtype` `\"fp8_e4m3\"`"),
      no_default(scale("v_scale", &CacheSpec::v_scale,
                       "Dequantisation scale of V: the cache stores V / `v_scale`. Any "
                       "calibrated value (e.g. 0.0173); only with `dtype` `\"fp8_e4m3\"`."),
                 "none; required with `dtype` `\"fp8_e4m3\"`"),
  };
  return f;
}

const Fields<GraphSpec>& graph_fields() {
  static const Fields<GraphSpec> f = {
      choice("mode", &GraphSpec::mode, kGraphModeNames,
             "`off`: every step runs eagerly; `decode`: pure-decode steps replay the graph of "
             "the smallest capture size ≥ the batch, padding the rest. `decode` needs at least "
             "one capture size."),
      {.key = "capture_sizes",
       .read = read_capture_sizes,
       .value_of = [](const GraphSpec& g) { return Json(g.capture_sizes); },
       .forms = {array_form(integer_form(1, kMaxCaptureSize), 0, kMaxCaptureSize, false)},
       .doc = "Batch sizes to capture: ascending, unique, each ≤ "
              "`engine.max_running_requests`."},
  };
  return f;
}

const Fields<EngineSpec>& engine_fields() {
  static const Fields<EngineSpec> f = {
      integer("max_running_requests", &EngineSpec::max_running_requests, 1, 4096,
              "Most requests in one step's batch."),
      integer("max_tokens_per_step", &EngineSpec::max_tokens_per_step, 1, 1'000'000,
              "Token budget of one step; longer prefills are chunked."),
      boolean("prefix_caching", &EngineSpec::prefix_caching,
              "Reuse full blocks whose token prefix is already cached. With a `linear` layer "
              "a hit shares the cached KV blocks but every position is computed again (the "
              "recurrent state at the hit is not cached), without rewriting the shared blocks."),
      {.key = "zero_new_blocks",
       .read = [](const Json& v, const std::string& p,
                  EngineSpec& out) { out.zero_new_blocks = read_layer_kinds(v, p, 0, true); },
       .value_of = [](const EngineSpec& e) { return layer_kind_names(e.zero_new_blocks); },
       .forms = {layer_kinds_form(0, true)},
       .doc = "Layer kinds whose newly allocated blocks are zeroed (the zero-on-allocation "
              "policy of seed 000); may be empty."},
      object("cuda_graphs", &EngineSpec::cuda_graphs, graph_fields,
             "CUDA-graph capture and replay (real graphs on the GPU, a faithful emulation on the "
             "host)."),
      boolean("zero_init_outputs", &EngineSpec::zero_init_outputs,
              "Zero the attention output buffers before every step (the seed-001 mitigation, "
              "which hides padded-row NaN at a throughput cost)."),
      integer("max_decode_splits", &EngineSpec::max_decode_splits, 1, 64,
              "Split-KV decode: most splits of one request's context."),
      choice("decode_splits", &EngineSpec::decode_splits, kDecodeSplitsNames,
             "How the built-in decode planner splits a batch: `per_row`: each row as many "
             "splits as its length needs; `uniform`: every row the batch's largest count, as "
             "fixed-split flash-decoding schedulers do, so shorter rows get splits with no "
             "tokens (empty softmax states the combine must merge). A backend that plans its "
             "own decodes plans as it does."),
  };
  return f;
}

const Fields<WorkloadSpec>& workload_fields() {
  static const Fields<WorkloadSpec> f = {
      integer("requests", &WorkloadSpec::num_requests, 1, kMaxRequestsPerEpoch,
              "Requests per epoch."),
      range("prompt_len", &WorkloadSpec::prompt_len, 1, kMaxRequestTokens,
            "Prompt length in tokens, drawn uniformly per request."),
      range("new_tokens", &WorkloadSpec::new_tokens, 1, kMaxRequestTokens,
            "Tokens generated per request; `prompt_len.max + new_tokens.max` ≤ 65536."),
      range("arrival_step", &WorkloadSpec::arrival_step, 0, kMaxInt,
            "Step at which a request becomes visible to the scheduler."),
      // Each group's prefix is drawn and held, used or not: bounded like the requests.
      integer("prefix_groups", &WorkloadSpec::prefix_groups, 0, kMaxRequestsPerEpoch,
              "Requests are dealt round-robin into this many groups whose members share a "
              "prompt prefix; `0`: no shared prefixes."),
      integer("shared_prefix_len", &WorkloadSpec::shared_prefix_len, 0, kMaxRequestTokens,
              "Tokens of each group's shared prefix; at most `prompt_len` min when "
              "`prefix_groups` > 0."),
      integer("epochs", &WorkloadSpec::epochs, 1, 1000,
              "Times the workload runs on the same engine; epoch 1 runs on fresh blocks, later "
              "epochs on recycled ones."),
  };
  return f;
}

const Fields<FaultSpec>& fault_fields() {
  static const Fields<FaultSpec> f = {
      choice("freed_blocks", &FaultSpec::freed_blocks, kPoisonPatternNames,
             "Fill blocks when they are freed or evicted."),
      choice("padded_rows", &FaultSpec::padded_rows, kPoisonPatternNames,
             "Fill the inputs of padded rows of a CUDA-graph replay."),
      choice("unwritten_outputs", &FaultSpec::unwritten_outputs, kPoisonPatternNames,
             "Fill the attention output buffers before every step, so a row no op writes is "
             "visible."),
  };
  return f;
}

const Fields<CheckSpec>& check_fields() {
  static const Fields<CheckSpec> f = {
      boolean("nonfinite", &CheckSpec::nonfinite,
              "Fail on any NaN or Inf in an output where the reference is finite."),
      boolean("drift", &CheckSpec::drift,
              "Fail when an output row's relative L2 error against the float64 reference "
              "exceeds the tolerance."),
      boolean("op_drift", &CheckSpec::op_drift,
              "Fail when an attention or MLA op's output row is further from the float64 value "
              "of that op over its own inputs (the engine's q, the cache as stored) than the "
              "bound its precision and shape give (docs/oracle.md)."),
      boolean("tokens", &CheckSpec::tokens,
              "Check each generated token against the reference's margin, and that every epoch "
              "generates the same tokens."),
      tolerance_field("tolerance", &CheckSpec::tolerance,
                      "Relative L2 tolerance per token and head, for every check site."),
      object("site_tolerances", &CheckSpec::site_tolerances, site_tolerance_fields,
             "Relative L2 tolerance of single check sites, over `tolerance` and the calibrated "
             "table: for a model whose clean drift the table does not fit (wider models "
             "compound more of it over layers). Calibrate with `scripts/calibrate-oracle.py`."),
      choice("reference", &CheckSpec::reference, kReferenceModeNames,
             "`full`: every request is checked against the float64 reference. `sampled`: per "
             "epoch only a seeded sample of `sampled_requests` requests is, as in full mode; the "
             "others only for NaN/Inf outputs and NaN logits. For workloads too large for the "
             "full reference, which costs O(length²) per request and layer. `auto`: full where "
             "the reference runs on a GPU (`--reference-device`) and its memory fits there, "
             "else sampled; the result says which and why."),
      // More than the epoch's requests is allowed: then every request is checked.
      default_only(integer("sampled_requests", &CheckSpec::sampled_requests, 1,
                           kMaxRequestsPerEpoch,
                           "Requests per epoch checked against the reference in sampled mode; "
                           "more than the epoch has means all. Only with `reference` "
                           "`\"sampled\"` or `\"auto\"`."),
                   "with `reference` `\"sampled\"` or `\"auto\"`"),
  };
  return f;
}

// A key the object must have, as a non-empty string.
Field<BackendSpec> required_text(Field<BackendSpec> f) {
  f.required = true;
  f.has_default = false;
  f.forms[0].min_length = 1;
  return f;
}

void read_builtin_ops(const Json& v, const std::string& p, BackendSpec& out) {
  const std::vector<std::string> names = backend::op_names();
  const auto& items = read_array(v, p, "op names", 0, names.size());
  out.builtin_ops.clear();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string item = child_pointer(p, i);
    const std::string name = read_string(items[i], item);
    if (std::find(names.begin(), names.end(), name) == names.end())
      fail(item, "got \"" + name + "\", expected a backend op: " + quoted_list(names) +
                     suggestion_tail(name, names));
    if (std::find(out.builtin_ops.begin(), out.builtin_ops.end(), name) != out.builtin_ops.end())
      fail(item, fmt::format("op \"{}\" is listed twice", name));
    out.builtin_ops.push_back(name);
  }
}

const Fields<BackendSpec>& backend_fields() {
  static const Fields<BackendSpec> f = {
      required_text(text("library", &BackendSpec::library,
                         "The plugin's shared library (`kvcheck run --backend`); a relative path "
                         "is taken from the scenario file's folder.")),
      default_only(Field<BackendSpec>{
                       .key = "builtin_ops",
                       .read = read_builtin_ops,
                       .value_of = [](const BackendSpec& b) { return Json(b.builtin_ops); },
                       .forms = {array_form(choice_form(backend::op_names()), 0, KVCHECK_NUM_OPS,
                                            true)},
                       .doc = "Ops pinned to the built-in device though the backend implements "
                              "them (`--backend-op OP=builtin`)."},
                   "with a `library`"),
      default_only(boolean("allow_fallback", &BackendSpec::allow_fallback,
                           "Ops whose declared capabilities cannot take this scenario run on the "
                           "built-in device instead of the run being refused "
                           "(`--allow-fallback`)."),
                   "with a `library`"),
      default_only(text("options", &BackendSpec::options,
                        "Text handed to the plugin's init (`--backend-option`)."),
                   "with a `library`"),
  };
  return f;
}

// `backend`: its fields, and a library is required once the object is there.
Field<Scenario> backend_field() {
  Field<Scenario> f = object("backend", &Scenario::backend, backend_fields,
                             "A backend plugin to run the attention and cache ops on, as `kvcheck "
                             "run --backend` does; the command line's `--backend` replaces it, "
                             "`--no-backend` ignores it.");
  f.read = [](const Json& v, const std::string& p, Scenario& out) {
    read_object(backend_fields(), v, p, out.backend);
    if (out.backend.library.empty())
      fail(child_pointer(p, "library"),
           v.contains("library") ? "got \"\", expected the path of a backend plugin (.so)"
                                 : "missing; a backend names its plugin's library");
  };
  return f;
}

// `labels`: tags for selecting runs (`kvcheck run --label`), each valid and at most once.
Field<Scenario> labels_field() {
  ValueForm label = plain_form(ValueForm::Kind::string);
  label.min_length = 1;
  label.max_length = kMaxLabelBytes;
  label.pattern = kLabelPattern;
  return {.key = "labels",
          .read =
              [](const Json& v, const std::string& p, Scenario& out) {
                const auto& items = read_array(v, p, "labels", 0, SIZE_MAX);
                out.labels.clear();
                for (size_t i = 0; i < items.size(); ++i) {
                  const std::string item = child_pointer(p, i);
                  std::string label = read_string(items[i], item);
                  if (auto why = label_problem(label)) fail(item, "got \"" + label + "\", " + *why);
                  if (std::find(out.labels.begin(), out.labels.end(), label) != out.labels.end())
                    fail(item, fmt::format("label \"{}\" is listed twice", label));
                  out.labels.push_back(std::move(label));
                }
              },
          .value_of = [](const Scenario& s) { return Json(s.labels); },
          .forms = {array_form(label, 0, SIZE_MAX, true)},
          .doc = "Tags for selecting runs: `kvcheck run --label L` runs the scenarios that carry "
                 "L, `--exclude-label L` leaves them out; `kvcheck list scenarios` shows them."};
}

const Fields<Scenario>& scenario_fields() {
  static const Fields<Scenario> f = {
      {.key = "format",
       .read = read_format,
       .forms = {format_form()},
       .doc = "Version of the format; this build reads 1 only.",
       .required = true},
      no_default(name_field(), "the file name without its extension"),
      text("description", &Scenario::description,
           "One or two sentences: what the scenario exercises and why."),
      labels_field(),
      seed("seed", &Scenario::seed,
           "Seed of the workload (token ids, lengths, arrivals) and of the fault patterns; "
           "`kvcheck run --seed` overrides it."),
      object("model", &Scenario::model, model_fields, "The synthetic transformer the engine runs."),
      object("cache", &Scenario::cache, cache_fields,
             "The paged KV cache: blocks shared by every request."),
      object("engine", &Scenario::engine, engine_fields, "Scheduler and runner options."),
      object("workload", &Scenario::workload, workload_fields,
             "The requests of one epoch; the same workload runs once per epoch on the same "
             "engine, without resetting the cache."),
      object("faults", &Scenario::faults, fault_fields,
             "Poisoning, like a debug allocator, so that a latent stale-data bug shows on the "
             "first step that has it. Each is a fill pattern: quiet NaN, Inf, random bits or "
             "none."),
      {.key = "regressions",
       .read = read_regressions,
       .value_of = [](const Scenario& s) { return Json(s.regressions.names()); },
       .forms = {array_form(choice_form(regression_names()), 0, SIZE_MAX, true)},
       .doc = "Named regressions to switch on, each at most once; `kvcheck list` describes "
              "them."},
      object("checks", &Scenario::checks, check_fields, "What is checked on every output."),
      choice("expect", &Scenario::expect, kExpectationNames,
             "The verdict the scenario should get: `clean` (no check fails) or `corrupt` (a "
             "check fails, e.g. with a regression on); kvcheck reports whether a run met it."),
      backend_field(),
  };
  return f;
}

}  // namespace

void read_scenario_fields(const Json& doc, Scenario& out) {
  read_object(scenario_fields(), doc, "", out);
}

void check_format(const Json& doc) {
  if (!doc.contains("format"))
    fail("/format", fmt::format("missing; every scenario must say which format it is written in "
                                "(\"format\": {})",
                                kScenarioFormat));
  Scenario unused;
  read_format(doc["format"], "/format", unused);
}

const std::vector<FieldInfo>& scenario_field_table() {
  static const std::vector<FieldInfo> table = [] {
    std::vector<FieldInfo> out;
    add_fields<Scenario>(scenario_fields(), "",
                         [](const Scenario& s) -> const Scenario& { return s; }, out);
    return out;
  }();
  return table;
}

}  // namespace kv
