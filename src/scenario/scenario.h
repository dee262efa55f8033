// scenario.h — a parsed, validated scenario: plain data, no behaviour.
//
// The JSON format is defined by the field table (field_table.h), which generates the docs' field
// table and scenarios/schema/scenario.schema.json; parse_scenario() (parse.h) is the only way to
// build one from text. The member initialisers here are the defaults the table reports;
// validation guarantees the invariants noted in comments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dtype.cuh"
#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"
#include "scenario/regressions.h"

namespace kv {

inline constexpr int kScenarioFormat = 1;
// workload.requests, and so the largest useful checks.sampled_requests (--sampled-requests too).
inline constexpr int32_t kMaxRequestsPerEpoch = 100'000;
// prompt + new tokens of one request.
inline constexpr int32_t kMaxRequestTokens = 65536;

// attention: GQA over a paged K/V cache. mla: multi-head latent attention over a one-head latent
// cache of kv_lora_rank + qk_rope_dim values per token (absorbed decode, FlashMLA-like whole-tile
// P·V). linear: gated linear attention with a per-request recurrent state held in one block of the
// hybrid pool (num_q_heads heads of head_dim x head_dim floats).
enum class LayerKind { attention, mla, linear };

struct ModelSpec {
  std::vector<LayerKind> layers = {LayerKind::attention, LayerKind::attention};  // at least one
  int32_t num_q_heads = 4;
  int32_t num_kv_heads = 2;       // divides num_q_heads
  int32_t head_dim = 16;
  int32_t hidden_size = 64;
  int32_t vocab_size = 128;
  uint64_t weight_seed = 1;
  // MLA layers only (a file that sets them without an "mla" layer is refused).
  int32_t kv_lora_rank = 512;  // latent features per token; V of every head lives in them
  int32_t qk_rope_dim = 64;    // the decoupled positional key shared by all heads
};

// Both index every layer's cache by the same block ids (engine/block_pool.h); they differ in the
// buffers behind them (engine/cache_layout.h). per_layer: every layer has a buffer of its own.
// hybrid: one raw buffer per "slot", shared by the j-th attention-like layer (attention or mla)
// and the j-th linear layer; a block id is owned either by the KV group (attention-like layers, a
// block table per request) or by the state group (linear layers, one block per request), so a
// block freed by one group and taken by the other is read byte for byte as the other's data.
// Every view uses the largest page of the kinds as its block stride; attention layers must use
// the kv_interleaved layout there.
enum class PoolKind { per_layer, hybrid };

struct CacheSpec {
  int32_t num_blocks = 64;  // including the reserved null block 0
  int32_t block_size = 16;
  DType dtype = DType::bf16;  // f32, f16, bf16 or fp8_e4m3
  KvLayout layout = KvLayout::kv_separate;
  PoolKind pool = PoolKind::per_layer;
  // fp8_e4m3 only, and then required: per-tensor dequantisation scales (stored = value / scale).
  // MLA layers use k_scale for their latent (their V is the latent).
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

enum class GraphMode { off, decode };

// How the built-in decode planner gives a batch's rows their splits (kernels/decode_splits.h).
enum class DecodeSplits { per_row, uniform };

struct GraphSpec {
  GraphMode mode = GraphMode::off;
  std::vector<int32_t> capture_sizes;  // ascending, unique, each <= max_running_requests
};

struct EngineSpec {
  int32_t max_running_requests = 8;
  int32_t max_tokens_per_step = 256;  // chunked-prefill token budget
  bool prefix_caching = true;
  std::vector<LayerKind> zero_new_blocks = {LayerKind::attention, LayerKind::mla};
  GraphSpec cuda_graphs;
  bool zero_init_outputs = false;  // the seed-001 mitigation: memset attention outputs each step
  int32_t max_decode_splits = 4;   // split-KV: most splits per decode row
  DecodeSplits decode_splits = DecodeSplits::per_row;
};

struct Range {
  int32_t min = 0;
  int32_t max = 0;  // inclusive, >= min
};

struct WorkloadSpec {
  int32_t num_requests = 8;
  Range prompt_len{8, 32};
  Range new_tokens{4, 16};
  int32_t prefix_groups = 0;     // requests are dealt round-robin into this many groups...
  int32_t shared_prefix_len = 0; // ...whose members share their first shared_prefix_len tokens
  Range arrival_step{0, 0};      // step at which a request becomes visible to the scheduler
  int32_t epochs = 1;
};

enum class PoisonPattern { none, nan, inf, random_bits };

struct FaultSpec {
  PoisonPattern freed_blocks = PoisonPattern::none;      // blocks freed or evicted
  PoisonPattern padded_rows = PoisonPattern::none;       // inputs of padded graph rows
  PoisonPattern unwritten_outputs = PoisonPattern::none; // output buffers before each step
};

// full: every request is checked against the float64 reference. sampled: per epoch only a seeded
// sample of requests is (reference/reference_sample.h); the rest get the checks that need no reference
// (non-finite outputs, NaN logits), so the reference's cost is the sample's, not the workload's.
// automatic ("auto"): full where the reference runs on a GPU and its memory fits there, else
// sampled (the run records which and why); the CLI resolves it before a run starts.
enum class ReferenceMode { full, sampled, automatic };

// A drift tolerance for one check site (result/check_sites.h names them the same), where the
// calibrated table does not fit a model: clean drift compounds over layers, more so in wider
// models (results/oracle-calibration.md).
struct SiteToleranceSpec {
  std::optional<double> decode;
  std::optional<double> prefill;
  std::optional<double> prefill_with_context;
  std::optional<double> mla_decode;
  std::optional<double> mla_prefill;
  std::optional<double> mla_prefill_with_context;
  std::optional<double> linear_attention_output;
};

// Each key of SiteToleranceSpec once: its name (the check site's), its member and the layer kind
// whose rows that site judges. The validator, the tolerances and the tests walk this table.
struct SiteToleranceKey {
  const char* name;
  std::optional<double> SiteToleranceSpec::*member;
  LayerKind kind;
};
inline constexpr SiteToleranceKey kSiteToleranceKeys[] = {
    {"decode", &SiteToleranceSpec::decode, LayerKind::attention},
    {"prefill", &SiteToleranceSpec::prefill, LayerKind::attention},
    {"prefill_with_context", &SiteToleranceSpec::prefill_with_context, LayerKind::attention},
    {"mla_decode", &SiteToleranceSpec::mla_decode, LayerKind::mla},
    {"mla_prefill", &SiteToleranceSpec::mla_prefill, LayerKind::mla},
    {"mla_prefill_with_context", &SiteToleranceSpec::mla_prefill_with_context, LayerKind::mla},
    {"linear_attention_output", &SiteToleranceSpec::linear_attention_output, LayerKind::linear},
};

struct CheckSpec {
  bool nonfinite = true;
  bool drift = true;
  // Each attention-like op's output against float64 from its own inputs (check/op_checker.h).
  bool op_drift = true;
  bool tokens = true;  // reference-margin check of each generated token + epoch agreement
  std::optional<double> tolerance;  // relative L2 per token x head, every site; default calibrated
  SiteToleranceSpec site_tolerances;  // per site; over `tolerance` and the calibrated table
  ReferenceMode reference = ReferenceMode::full;
  int32_t sampled_requests = 8;  // requests per epoch checked in sampled mode (>= 1); a file
                                 // may only set it with reference "sampled" or "auto"
};

enum class Expectation { clean, corrupt };

// A backend plugin the scenario runs its attention/cache ops on, as `kvcheck run --backend`
// would; library empty: none. The command line's --backend replaces it, --no-backend ignores it.
struct BackendSpec {
  std::string library;                 // a path; relative: to the scenario file's folder
  std::vector<std::string> builtin_ops;  // ABI ops pinned to the built-in device (--backend-op)
  bool allow_fallback = false;         // --allow-fallback
  std::string options;                 // --backend-option
};

// A value the file spelt as the format no longer does (a renamed enum name, enum_names.h): read
// as today's spelling; the command line warns about it (old_spellings.h).
struct OldSpelling {
  std::string pointer;   // "/cache/layout"
  std::string old_name;  // "plain"
  std::string new_name;  // "kv_separate"
};

struct Scenario {
  int32_t format = kScenarioFormat;
  std::string name;          // defaults to the file's stem
  std::string description;
  std::vector<std::string> labels;  // for selecting runs (scenario/labels.h), each at most once
  std::string source_path;   // where it was read from ("" for a string)
  std::vector<OldSpelling> old_spellings;  // in the file, in field-table order
  uint64_t seed = 0;         // workload and fault seed; --seed overrides
  ModelSpec model;
  CacheSpec cache;
  EngineSpec engine;
  WorkloadSpec workload;
  FaultSpec faults;
  RegressionSet regressions;
  CheckSpec checks;
  Expectation expect = Expectation::clean;
  BackendSpec backend;
};

inline bool has_layer(const ModelSpec& m, LayerKind k) {
  return std::find(m.layers.begin(), m.layers.end(), k) != m.layers.end();
}

const char* to_string(LayerKind k);
const char* to_string(DType t);
const char* to_string(KvLayout l);
const char* to_string(PoolKind p);
const char* to_string(GraphMode m);
const char* to_string(DecodeSplits d);
const char* to_string(PoisonPattern p);
const char* to_string(Expectation e);
const char* to_string(ReferenceMode m);

}  // namespace kv
