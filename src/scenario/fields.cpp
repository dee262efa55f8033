// fields.cpp — the scenario field table (format version 1) and the reader that walks it.
#include "scenario/fields.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "scenario/regressions.h"

namespace kv {
namespace {

using KeyTable = std::map<std::string, std::vector<std::string>>;

template <class T>
struct Field {
  std::string_view key;
  std::function<void(const Json& value, const std::string& pointer, T& out)> read;
  // Nested objects only: add this object's keys (and its children's) to the table.
  std::function<void(const std::string& pointer, KeyTable& out)> list_keys;
};

template <class T>
using Fields = std::vector<Field<T>>;

template <class T>
std::vector<std::string> keys_of(const Fields<T>& fields) {
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.emplace_back(f.key);
  return keys;
}

template <class T>
void read_object(const Fields<T>& fields, const Json& v, const std::string& pointer, T& out) {
  require_object(v, pointer);
  for (const auto& [key, value] : v.items()) {
    const std::string child = child_pointer(pointer, key);
    const auto f = std::find_if(fields.begin(), fields.end(),
                                [&](const Field<T>& f) { return f.key == key; });
    if (f == fields.end()) {
      const std::vector<std::string> keys = keys_of(fields);
      if (auto best = closest_name(key, keys))
        fail(child, "unknown key; did you mean \"" + *best + "\"?");
      fail(child, "unknown key; the keys here are " + quoted_list(keys));
    }
    f->read(value, child, out);
  }
}

template <class T>
void list_object_keys(const Fields<T>& fields, const std::string& pointer, KeyTable& out) {
  auto& keys = out[pointer];
  for (const auto& f : fields) {
    keys.emplace_back(f.key);
    if (f.list_keys) f.list_keys(child_pointer(pointer, f.key), out);
  }
}

// ---- field builders: one line of the table each ----

template <class T>
Field<T> integer(std::string_view key, int32_t T::*member, int32_t lo, int32_t hi,
                 std::string_view why = {}) {
  return {key, [=](const Json& v, const std::string& p, T& out) {
            out.*member = read_int(v, p, lo, hi, why);
          }, {}};
}

template <class T>
Field<T> scale(std::string_view key, float T::*member) {
  return {key, [=](const Json& v, const std::string& p, T& out) {
            out.*member = read_positive_float(v, p);
          }, {}};
}

template <class T>
Field<T> seed(std::string_view key, uint64_t T::*member) {
  return {key, [=](const Json& v, const std::string& p, T& out) {
            out.*member = read_uint64(v, p);
          }, {}};
}

template <class T>
Field<T> boolean(std::string_view key, bool T::*member) {
  return {key, [=](const Json& v, const std::string& p, T& out) { out.*member = read_bool(v, p); },
          {}};
}

template <class T>
Field<T> text(std::string_view key, std::string T::*member) {
  return {key, [=](const Json& v, const std::string& p, T& out) {
            out.*member = read_string(v, p);
          }, {}};
}

template <class T, class E, std::size_t N>
Field<T> choice(std::string_view key, E T::*member, const std::array<EnumName<E>, N>& names) {
  return {key, [member, &names](const Json& v, const std::string& p, T& out) {
            out.*member = read_enum(v, p, names);
          }, {}};
}

// A [min, max] pair, or one integer n meaning [n, n]; both ends within [lo, hi].
template <class T>
Field<T> range(std::string_view key, Range T::*member, int32_t lo, int32_t hi) {
  return {key, [=](const Json& v, const std::string& p, T& out) {
            if (!v.is_array() && !v.is_number())
              fail(p, fmt::format("got {}, expected {} or a [min, max] pair of them", describe(v),
                                  integer_range_text(lo, hi)));
            if (v.is_number()) {
              const int32_t n = read_int(v, p, lo, hi);
              out.*member = Range{n, n};
              return;
            }
            if (v.size() != 2)
              fail(p, fmt::format("got {}, expected a [min, max] pair of two integers",
                                  describe(v)));
            const Range r{read_int(v[0], child_pointer(p, 0), lo, hi),
                          read_int(v[1], child_pointer(p, 1), lo, hi)};
            if (r.max < r.min)
              fail(p, fmt::format("got [{}, {}], but max {} is below min {}", r.min, r.max, r.max,
                                  r.min));
            out.*member = r;
          }, {}};
}

template <class T, class S>
Field<T> object(std::string_view key, S T::*member, const Fields<S>& (*fields)()) {
  return {key,
          [=](const Json& v, const std::string& p, T& out) {
            read_object(fields(), v, p, out.*member);
          },
          [=](const std::string& p, KeyTable& out) { list_object_keys(fields(), p, out); }};
}

// ---- values with more structure than one builder ----

std::vector<LayerKind> read_layer_kinds(const Json& v, const std::string& p, std::size_t min_size,
                                        bool unique) {
  const auto& items = read_array(v, p, "layer kinds", min_size, 64);
  std::vector<LayerKind> kinds;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const LayerKind k = read_enum(items[i], child_pointer(p, i), kLayerKindNames);
    if (unique && std::find(kinds.begin(), kinds.end(), k) != kinds.end())
      fail(child_pointer(p, i), fmt::format("\"{}\" is listed twice", to_string(k)));
    kinds.push_back(k);
  }
  return kinds;
}

void read_layers(const Json& v, const std::string& p, ModelSpec& out) {
  if (v.is_number()) {  // n attention layers
    out.layers.assign(static_cast<std::size_t>(read_int(v, p, 1, 64)), LayerKind::attention);
    return;
  }
  if (!v.is_array())
    fail(p, fmt::format("got {}, expected a layer count from 1 to 64 or an array of layer kinds "
                        "({})",
                        describe(v), quoted_list(enum_names(kLayerKindNames))));
  out.layers = read_layer_kinds(v, p, 1, /*unique=*/false);
}

void read_capture_sizes(const Json& v, const std::string& p, GraphSpec& out) {
  const auto& items = read_array(v, p, "capture sizes", 0, 4096);
  out.capture_sizes.clear();
  for (std::size_t i = 0; i < items.size(); ++i)
    out.capture_sizes.push_back(read_int(items[i], child_pointer(p, i), 1, 4096));
}

void read_regressions(const Json& v, const std::string& p, Scenario& out) {
  std::vector<std::string> registered;
  for (const auto& r : all_regressions()) registered.emplace_back(r.name);
  // No length limit: a name may appear once, so the registry bounds the length.
  const auto& items = read_array(v, p, "regression names", 0, SIZE_MAX);
  out.regressions.clear();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string item = child_pointer(p, i);
    const std::string name = read_string(items[i], item);
    if (!find_regression(name))
      fail(item, "unknown regression \"" + name + "\"" + suggestion_tail(name, registered));
    const auto first = std::find(out.regressions.begin(), out.regressions.end(), name);
    if (first != out.regressions.end())
      fail(item, fmt::format("regression \"{}\" is listed twice (first at {})", name,
                             child_pointer(p, first - out.regressions.begin())));
    out.regressions.push_back(name);
  }
}

void read_format(const Json& v, const std::string& p, Scenario& out) {
  if (!(v.is_number() && v == kScenarioFormat))  // 1.0 == 1, as for every integer
    fail(p, fmt::format("got {}, expected {} (the only format version this build reads)",
                        describe(v), kScenarioFormat));
  out.format = kScenarioFormat;
}

// ---- the table ----

const Fields<ModelSpec>& model_fields() {
  static const Fields<ModelSpec> f = {
      {"layers", read_layers, {}},
      integer("num_q_heads", &ModelSpec::num_q_heads, 1, 64),
      integer("num_kv_heads", &ModelSpec::num_kv_heads, 1, 64),
      integer("head_dim", &ModelSpec::head_dim, 1, 256),
      integer("hidden_size", &ModelSpec::hidden_size, 1, 4096),
      integer("vocab_size", &ModelSpec::vocab_size, 2, 65536),
      seed("weight_seed", &ModelSpec::weight_seed),
      integer("kv_lora_rank", &ModelSpec::kv_lora_rank, 2, 1024,
              "latent feature 0 is a constant the model reserves, so at least 2"),
      integer("qk_rope_dim", &ModelSpec::qk_rope_dim, 0, 256),
  };
  return f;
}

const Fields<CacheSpec>& cache_fields() {
  static const Fields<CacheSpec> f = {
      integer("num_blocks", &CacheSpec::num_blocks, 2, 1'000'000),
      integer("block_size", &CacheSpec::block_size, 1, 256),
      choice("dtype", &CacheSpec::dtype, kCacheDTypeNames),
      choice("layout", &CacheSpec::layout, kKvLayoutNames),
      choice("pool", &CacheSpec::pool, kPoolKindNames),
      scale("k_scale", &CacheSpec::k_scale),
      scale("v_scale", &CacheSpec::v_scale),
  };
  return f;
}

const Fields<GraphSpec>& graph_fields() {
  static const Fields<GraphSpec> f = {
      choice("mode", &GraphSpec::mode, kGraphModeNames),
      {"capture_sizes", read_capture_sizes, {}},
  };
  return f;
}

const Fields<EngineSpec>& engine_fields() {
  static const Fields<EngineSpec> f = {
      integer("max_running_requests", &EngineSpec::max_running_requests, 1, 4096),
      integer("max_tokens_per_step", &EngineSpec::max_tokens_per_step, 1, 1'000'000),
      boolean("prefix_caching", &EngineSpec::prefix_caching),
      {"zero_new_blocks",
       [](const Json& v, const std::string& p, EngineSpec& out) {
         out.zero_new_blocks = read_layer_kinds(v, p, 0, /*unique=*/true);
       },
       {}},
      object("cuda_graphs", &EngineSpec::cuda_graphs, graph_fields),
      boolean("zero_init_outputs", &EngineSpec::zero_init_outputs),
      integer("max_decode_splits", &EngineSpec::max_decode_splits, 1, 64),
  };
  return f;
}

constexpr int32_t kMaxInt = std::numeric_limits<int32_t>::max();
constexpr int32_t kMaxRequestTokens = 65536;  // prompt + new tokens of one request

const Fields<WorkloadSpec>& workload_fields() {
  static const Fields<WorkloadSpec> f = {
      integer("requests", &WorkloadSpec::num_requests, 1, kMaxRequestsPerEpoch),
      range("prompt_len", &WorkloadSpec::prompt_len, 1, kMaxRequestTokens),
      range("new_tokens", &WorkloadSpec::new_tokens, 1, kMaxRequestTokens),
      range("arrival_step", &WorkloadSpec::arrival_step, 0, kMaxInt),
      integer("prefix_groups", &WorkloadSpec::prefix_groups, 0, kMaxInt),
      integer("shared_prefix_len", &WorkloadSpec::shared_prefix_len, 0, kMaxInt),
      integer("epochs", &WorkloadSpec::epochs, 1, 1000),
  };
  return f;
}

const Fields<FaultSpec>& fault_fields() {
  static const Fields<FaultSpec> f = {
      choice("freed_blocks", &FaultSpec::freed_blocks, kPoisonPatternNames),
      choice("padded_rows", &FaultSpec::padded_rows, kPoisonPatternNames),
      choice("unwritten_outputs", &FaultSpec::unwritten_outputs, kPoisonPatternNames),
  };
  return f;
}

const Fields<CheckSpec>& check_fields() {
  static const Fields<CheckSpec> f = {
      boolean("nonfinite", &CheckSpec::nonfinite),
      boolean("drift", &CheckSpec::drift),
      boolean("tokens", &CheckSpec::tokens),
      {"tolerance",
       [](const Json& v, const std::string& p, CheckSpec& out) {
         out.tolerance = read_number_between(v, p, 0.0, 1.0);
       },
       {}},
      choice("reference", &CheckSpec::reference, kReferenceModeNames),
      // More than the epoch's requests is allowed: then every request is checked.
      integer("sampled_requests", &CheckSpec::sampled_requests, 1, kMaxRequestsPerEpoch),
  };
  return f;
}

const Fields<Scenario>& scenario_fields() {
  static const Fields<Scenario> f = {
      {"format", read_format, {}},
      {"name",
       [](const Json& v, const std::string& p, Scenario& out) {
         out.name = read_string(v, p);
         if (out.name.empty()) fail(p, "got \"\" (a string), expected a non-empty name");
       },
       {}},
      text("description", &Scenario::description),
      seed("seed", &Scenario::seed),
      object("model", &Scenario::model, model_fields),
      object("cache", &Scenario::cache, cache_fields),
      object("engine", &Scenario::engine, engine_fields),
      object("workload", &Scenario::workload, workload_fields),
      object("faults", &Scenario::faults, fault_fields),
      {"regressions", read_regressions, {}},
      object("checks", &Scenario::checks, check_fields),
      choice("expect", &Scenario::expect, kExpectationNames),
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

std::map<std::string, std::vector<std::string>> known_scenario_keys() {
  KeyTable table;
  list_object_keys(scenario_fields(), "", table);
  return table;
}

}  // namespace kv
