// parse_errors_test.cpp — malformed scenarios: each must give exactly one error, at the right JSON
// pointer, whose message says what was found and what was expected.
#include <gtest/gtest.h>

#include "scenario/parse.h"

namespace kv {
namespace {

struct BadCase {
  const char* label;
  const char* text;
  const char* pointer;  // expected ScenarioError::pointer
  const char* phrase;   // must appear in the message
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.label; }

class BadScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, ReportsPointerAndReason) {
  const BadCase& c = GetParam();
  const auto r = parse_scenario(c.text, "bad.json");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r)) << "parsed, but should not have";
  const ScenarioError& e = std::get<ScenarioError>(r);
  EXPECT_EQ(e.pointer, c.pointer) << e.message;
  EXPECT_NE(e.message.find(c.phrase), std::string::npos)
      << "message: " << e.message << "\nexpected to contain: " << c.phrase;
}

const BadCase kBadCases[] = {
    // ---- document level ----
    {"syntax_error_line_column", "{\n  \"format\": 1,\n  \"seed\": 3,\n    ]\n}", "",
     "line 4, column 5: syntax error"},
    {"truncated", "{\"format\": 1,", "", "line 1, column 14: "},
    {"top_level_array", "[1, 2]", "", "the top level is [1, 2] (an array); expected a JSON object"},
    {"missing_format", R"({"seed": 1})", "/format", "missing"},
    {"wrong_format_version", R"({"format": 2})", "/format",
     "got 2, expected 1 (the only format version"},
    {"format_as_string", R"({"format": "1"})", "/format", R"(got "1" (a string), expected 1)"},
    {"duplicate_key", R"({"format": 1, "cache": {"block_size": 8, "block_size": 16}})",
     "/cache/block_size", "appears twice"},

    // ---- unknown keys ----
    {"unknown_key_suggestion", R"({"format": 1, "engine": {"max_tokens_per_stp": 4}})",
     "/engine/max_tokens_per_stp", R"(unknown key; did you mean "max_tokens_per_step"?)"},
    {"unknown_top_key_suggestion", R"({"format": 1, "regresions": []})", "/regresions",
     R"(did you mean "regressions"?)"},
    {"unknown_key_no_close_match", R"({"format": 1, "cache": {"colour": "red"}})",
     "/cache/colour", R"(unknown key; the keys here are "num_blocks", "block_size")"},
    {"unknown_key_escaped_pointer", R"({"format": 1, "model": {"a/b": 1}})", "/model/a~1b",
     "unknown key"},
    {"misspelt_kv_lora_rank", R"({"format": 1, "model": {"layers": ["mla"], "kv_lora_rnak": 64}})",
     "/model/kv_lora_rnak", R"(unknown key; did you mean "kv_lora_rank"?)"},
    {"misspelt_qk_rope_dim", R"({"format": 1, "model": {"qk_rope_dims": 32}})",
     "/model/qk_rope_dims", R"(unknown key; did you mean "qk_rope_dim"?)"},
    {"misspelt_k_scale", R"({"format": 1, "cache": {"dtype": "fp8_e4m3", "k_sacle": 0.5}})",
     "/cache/k_sacle", R"(unknown key; did you mean "k_scale"?)"},
    {"misspelt_pool", R"({"format": 1, "cache": {"pol": "hybrid"}})", "/cache/pol",
     R"(unknown key; did you mean "pool"?)"},
    {"unknown_nested_graph_key", R"({"format": 1, "engine": {"cuda_graphs": {"sizes": [1]}}})",
     "/engine/cuda_graphs/sizes", "unknown key"},

    // ---- types ----
    {"string_for_integer", R"({"format": 1, "model": {"num_q_heads": "4"}})",
     "/model/num_q_heads", R"(got "4" (a string), expected an integer from 1 to 256)"},
    {"q_heads_above_256", R"({"format": 1, "model": {"num_q_heads": 257, "num_kv_heads": 1}})",
     "/model/num_q_heads", "got 257, expected an integer from 1 to 256"},
    {"kv_heads_above_256", R"({"format": 1, "model": {"num_q_heads": 256, "num_kv_heads": 512}})",
     "/model/num_kv_heads", "got 512, expected an integer from 1 to 256"},
    {"fraction_for_integer", R"({"format": 1, "cache": {"block_size": 3.5}})",
     "/cache/block_size", "got 3.5, expected an integer from 1 to 256"},
    {"bool_for_integer", R"({"format": 1, "workload": {"epochs": true}})", "/workload/epochs",
     "got true (a boolean), expected an integer"},
    {"int_for_bool", R"({"format": 1, "engine": {"prefix_caching": 1}})",
     "/engine/prefix_caching", "got 1, expected true or false"},
    {"array_for_object", R"({"format": 1, "model": []})", "/model",
     "got [] (an array), expected an object"},
    {"null_for_string", R"({"format": 1, "name": null})", "/name", "got null, expected a string"},
    {"empty_name", R"({"format": 1, "name": ""})", "/name", "non-empty"},
    {"negative_seed", R"({"format": 1, "seed": -1})", "/seed",
     "got -1, expected an integer from 0 to 18446744073709551615"},

    // ---- ranges and overflow ----
    {"block_size_zero", R"({"format": 1, "cache": {"block_size": 0}})", "/cache/block_size",
     "got 0, expected an integer from 1 to 256"},
    {"int32_overflow", R"({"format": 1, "workload": {"arrival_step": 4294967296}})",
     "/workload/arrival_step", "got 4294967296, expected an integer from 0 to 2147483647"},
    {"int64_overflow", R"({"format": 1, "workload": {"arrival_step": 99999999999999999999}})",
     "/workload/arrival_step", "expected an integer from 0 to 2147483647"},
    {"too_many_prefix_groups", R"({"format": 1, "workload": {"prefix_groups": 1000000000}})",
     "/workload/prefix_groups", "got 1000000000, expected an integer from 0 to 100000"},
    {"huge_float", R"({"format": 1, "model": {"head_dim": 1e300}})", "/model/head_dim",
     "expected an integer from 1 to 256"},
    {"one_layer_too_many", R"({"format": 1, "model": {"layers": 65}})", "/model/layers",
     "got 65, expected an integer from 1 to 64"},
    {"no_layers", R"({"format": 1, "model": {"layers": []}})", "/model/layers",
     "got 0 elements, expected 1 to 64 layer kinds"},
    {"vocab_of_one", R"({"format": 1, "model": {"vocab_size": 1}})", "/model/vocab_size",
     "expected an integer from 2 to 65536"},
    {"tolerance_one", R"({"format": 1, "checks": {"tolerance": 1}})", "/checks/tolerance",
     "got 1, expected a number greater than 0 and less than 1"},
    {"tolerance_string", R"({"format": 1, "checks": {"tolerance": "0.1"}})", "/checks/tolerance",
     R"(got "0.1" (a string), expected a number)"},
    {"site_tolerance_zero", R"({"format": 1, "checks": {"site_tolerances": {"decode": 0}}})",
     "/checks/site_tolerances/decode", "got 0, expected a number greater than 0 and less than 1"},
    {"site_tolerance_misspelt_site",
     R"({"format": 1, "checks": {"site_tolerances": {"mla_decod": 0.01}}})",
     "/checks/site_tolerances/mla_decod", R"(unknown key; did you mean "mla_decode"?)"},
    {"site_tolerance_of_a_site_without_drift",
     R"({"format": 1, "checks": {"site_tolerances": {"sampled_token": 0.01}}})",
     "/checks/site_tolerances/sampled_token", "unknown key"},
    {"site_tolerance_of_a_layer_kind_the_model_lacks",
     R"({"format": 1, "checks": {"site_tolerances": {"mla_decode": 0.01}}})",
     "/checks/site_tolerances/mla_decode",
     "got 0.01, but mla_decode rows come from mla layers and model.layers has none"},
    {"site_tolerances_not_an_object",
     R"({"format": 1, "checks": {"site_tolerances": 0.01}})", "/checks/site_tolerances",
     "expected an object"},

    // ---- enums ----
    {"bad_dtype_suggestion", R"({"format": 1, "cache": {"dtype": "fp16"}})", "/cache/dtype",
     R"(got "fp16" (a string), expected one of "f32", "f16", "bf16", "fp8_e4m3"; did you mean "f16"?)"},
    {"bad_pool_suggestion", R"({"format": 1, "cache": {"pool": "hybird"}})", "/cache/pool",
     R"(got "hybird" (a string), expected one of "per_layer", "hybrid"; did you mean "hybrid"?)"},
    {"bad_enum_lists_choices", R"({"format": 1, "expect": "whatever"})", "/expect",
     R"(expected one of "clean", "corrupt")"},
    {"enum_wrong_type", R"({"format": 1, "faults": {"freed_blocks": 0}})", "/faults/freed_blocks",
     R"(got 0, expected one of "none", "nan", "inf", "random")"},
    {"bad_layer_kind_in_list", R"({"format": 1, "model": {"layers": ["attention", "gqa"]}})",
     "/model/layers/1", R"(expected one of "attention", "mla", "linear")"},
    {"zero_new_blocks_twice", R"({"format": 1, "engine": {"zero_new_blocks": ["mla", "mla"]}})",
     "/engine/zero_new_blocks/1", R"("mla" is listed twice)"},

    // ---- [min, max] ranges ----
    {"range_reversed", R"({"format": 1, "workload": {"prompt_len": [32, 8]}})",
     "/workload/prompt_len", "got [32, 8], but max 8 is below min 32"},
    {"range_three_elements", R"({"format": 1, "workload": {"new_tokens": [1, 2, 3]}})",
     "/workload/new_tokens", "expected a [min, max] pair"},
    {"range_element_below_min", R"({"format": 1, "workload": {"prompt_len": [0, 8]}})",
     "/workload/prompt_len/0", "got 0, expected an integer from 1 to 65536"},
    {"range_wrong_type", R"({"format": 1, "workload": {"arrival_step": "soon"}})",
     "/workload/arrival_step", "or a [min, max] pair"},

    // ---- regressions ----
    {"unknown_regression_suggestion",
     R"({"format": 1, "regressions": ["new-block-not-zeroed"]})", "/regressions/0",
     R"(unknown regression "new-block-not-zeroed"; did you mean "new-blocks-not-zeroed"?)"},
    {"unknown_regression_lists_choices", R"({"format": 1, "regressions": ["xyz"]})",
     "/regressions/0", R"(expected one of "merge-ignores-context-count")"},
    {"duplicate_regression",
     R"({"format": 1, "regressions": ["gather-assumes-contiguous", "new-blocks-not-zeroed",
         "gather-assumes-contiguous"]})",
     "/regressions/2", "listed twice (first at /regressions/0)"},

    // ---- MLA dimensions ----
    {"kv_lora_rank_one", R"({"format": 1, "model": {"layers": ["mla"], "kv_lora_rank": 1}})",
     "/model/kv_lora_rank",
     "got 1, expected an integer from 2 to 1024 (latent feature 0 is a constant the model "
     "reserves, so at least 2)"},
    {"kv_lora_rank_too_big", R"({"format": 1, "model": {"layers": ["mla"], "kv_lora_rank": 1025}})",
     "/model/kv_lora_rank", "got 1025, expected an integer from 2 to 1024"},
    {"qk_rope_dim_negative", R"({"format": 1, "model": {"layers": ["mla"], "qk_rope_dim": -1}})",
     "/model/qk_rope_dim", "got -1, expected an integer from 0 to 256"},
    {"qk_rope_dim_too_big", R"({"format": 1, "model": {"layers": ["mla"], "qk_rope_dim": 257}})",
     "/model/qk_rope_dim", "got 257, expected an integer from 0 to 256"},

    // ---- dequantisation scales, per field ----
    {"scale_zero", R"({"format": 1, "cache": {"dtype": "fp8_e4m3", "k_scale": 0, "v_scale": 1}})",
     "/cache/k_scale",
     "got 0, expected a finite number greater than 0 and at most 3.4028234663852886e+38"},
    {"scale_negative",
     R"({"format": 1, "cache": {"dtype": "fp8_e4m3", "k_scale": 1, "v_scale": -0.5}})",
     "/cache/v_scale", "got -0.5, expected a finite number greater than 0"},
    {"scale_string", R"({"format": 1, "cache": {"k_scale": "0.5"}})", "/cache/k_scale",
     R"(got "0.5" (a string), expected a finite number greater than 0)"},
    {"scale_beyond_float", R"({"format": 1, "cache": {"k_scale": 1e39}})", "/cache/k_scale",
     "got 1e+39, expected a finite number greater than 0 and at most 3.4028234663852886e+38 (the "
     "largest float)"},
    {"scale_infinite", R"({"format": 1, "cache": {"dtype": "fp8_e4m3", "k_scale": 1e400}})",
     "/cache/k_scale", "got 1e400, which is beyond the range of a double (about 1.8e308); "
     "expected a finite number"},
    {"overflowing_number_in_an_array",
     R"({"format": 1, "engine": {"cuda_graphs": {"capture_sizes": [1, -1e999]}}})",
     "/engine/cuda_graphs/capture_sizes/1", "got -1e999, which is beyond the range of a double"},
    {"scale_rounds_to_zero_as_float", R"({"format": 1, "cache": {"v_scale": 1e-50}})",
     "/cache/v_scale", "got 1e-50, expected a finite number greater than 0 and at most "
     "3.4028234663852886e+38 (the largest float); as a float it would be 0"},

    // ---- cross-field: MLA-only keys ----
    {"kv_lora_rank_without_mla", R"({"format": 1, "model": {"kv_lora_rank": 256}})",
     "/model/kv_lora_rank",
     "got 256, but kv_lora_rank only applies to mla layers; the model has none"},
    {"qk_rope_dim_without_mla",
     R"({"format": 1, "model": {"layers": ["attention", "linear"], "qk_rope_dim": 32}})",
     "/model/qk_rope_dim", "got 32, but qk_rope_dim only applies to mla layers; the model has none"},
    {"mla_key_with_a_layer_count", R"({"format": 1, "model": {"layers": 3, "kv_lora_rank": 64}})",
     "/model/kv_lora_rank", "got 64, but kv_lora_rank only applies to mla layers"},

    // ---- cross-field: fp8 cache and its scales ----
    {"fp8_without_scales", R"({"format": 1, "cache": {"dtype": "fp8_e4m3"}})", "/cache/dtype",
     R"(got "fp8_e4m3", but cache.k_scale and cache.v_scale are missing: an fp8 cache stores )"
     R"(value / scale)"},
    {"fp8_without_v_scale", R"({"format": 1, "cache": {"dtype": "fp8_e4m3", "k_scale": 0.5}})",
     "/cache/dtype", R"(got "fp8_e4m3", but cache.v_scale is missing)"},
    {"fp8_without_k_scale", R"({"format": 1, "cache": {"v_scale": 0.5, "dtype": "fp8_e4m3"}})",
     "/cache/dtype", R"(got "fp8_e4m3", but cache.k_scale is missing)"},
    {"k_scale_with_default_dtype", R"({"format": 1, "cache": {"k_scale": 0.5}})",
     "/cache/k_scale",
     R"(got 0.5, but cache.dtype is "bf16" (the default): only an fp8_e4m3 cache stores value / )"
     R"(scale)"},
    {"v_scale_with_f16", R"({"format": 1, "cache": {"dtype": "f16", "v_scale": 2}})",
     "/cache/v_scale", R"(got 2, but cache.dtype is "f16": only an fp8_e4m3 cache)"},

    // ---- cross-field: linear layers and the hybrid pool ----
    {"linear_needs_hybrid_pool", R"({"format": 1, "model": {"layers": ["attention", "linear"]}})",
     "/model/layers/1",
     R"(layer kind "linear" needs cache.pool "hybrid", got "per_layer" (the default): )"
     R"(linear-attention state lives in blocks of the shared pool; set cache.pool to "hybrid")"},
    {"linear_with_explicit_per_layer_pool",
     R"({"format": 1, "model": {"layers": ["mla", "linear", "linear"]},
         "cache": {"pool": "per_layer"}})",
     "/model/layers/1", R"(needs cache.pool "hybrid", got "per_layer":)"},
    {"hybrid_without_linear",
     R"({"format": 1, "model": {"layers": ["attention", "mla"]},
         "cache": {"pool": "hybrid", "layout": "kv_interleaved"}})",
     "/cache/pool",
     R"(got "hybrid", but the model has no "linear" layer: a hybrid pool shares its blocks )"
     R"(between linear-attention state and KV, so there is nothing to share; use "per_layer")"},
    {"hybrid_with_default_kv_separate_layout",
     R"({"format": 1, "model": {"layers": ["linear", "attention"]}, "cache": {"pool": "hybrid"},
         "engine": {"prefix_caching": false}})",
     "/cache/layout",
     R"(got "kv_separate" (the default), but a hybrid pool keeps K and V of a block together )"
     R"((/model/layers/1 is an attention layer): use "kv_interleaved")"},
    {"hybrid_with_written_kv_separate_layout",
     R"({"format": 1, "model": {"layers": ["attention", "linear"]},
         "cache": {"layout": "kv_separate", "pool": "hybrid"},
         "engine": {"prefix_caching": false}})",
     "/cache/layout", R"(got "kv_separate", but a hybrid pool keeps K and V of a block together)"},
    // An old spelling (old_spellings.h) in a value refused: the message says what the file wrote.
    {"hybrid_with_written_old_plain_layout",
     R"({"format": 1, "model": {"layers": ["attention", "linear"]},
         "cache": {"layout": "plain", "pool": "hybrid"}, "engine": {"prefix_caching": false}})",
     "/cache/layout",
     R"(use "kv_interleaved" (the file writes "plain", the old spelling of "kv_separate"))"},
    {"bad_layout_lists_todays_names", R"({"format": 1, "cache": {"layout": "interleave"}})",
     "/cache/layout",
     R"(got "interleave" (a string), expected one of "kv_separate", "kv_interleaved")"},
    {"cache_too_small_for_the_state_block",
     R"({"format": 1, "model": {"layers": ["linear"]},
         "cache": {"pool": "hybrid", "num_blocks": 6, "block_size": 16},
         "engine": {"prefix_caching": false},
         "workload": {"prompt_len": [8, 64], "new_tokens": [4, 16]}})",
     "/cache/num_blocks",
     "got 6, but the longest request (prompt 64 + 16 new tokens) needs 5 blocks of 16 plus 1 "
     "block of linear-attention state plus the null block"},

    // ---- cross-field: the rest ----
    {"kv_heads_not_divisor", R"({"format": 1, "model": {"num_q_heads": 4, "num_kv_heads": 3}})",
     "/model/num_kv_heads", "got 3, but num_q_heads = 4 is not a multiple of it"},
    {"q_heads_not_multiple_of_default", R"({"format": 1, "model": {"num_q_heads": 3}})",
     "/model/num_q_heads", "got 3, expected a multiple of num_kv_heads = 2"},
    {"capture_size_above_max_running",
     R"({"format": 1, "engine": {"max_running_requests": 8,
         "cuda_graphs": {"mode": "decode", "capture_sizes": [1, 4, 16]}}})",
     "/engine/cuda_graphs/capture_sizes/2",
     "capture size 16 is above engine.max_running_requests = 8"},
    {"capture_sizes_not_ascending",
     R"({"format": 1, "engine": {"cuda_graphs": {"capture_sizes": [1, 4, 2]}}})",
     "/engine/cuda_graphs/capture_sizes/2", "got 2 after 4, expected ascending"},
    {"capture_sizes_repeated",
     R"({"format": 1, "engine": {"cuda_graphs": {"capture_sizes": [2, 2]}}})",
     "/engine/cuda_graphs/capture_sizes/1", "no repeats"},
    {"decode_without_sizes", R"({"format": 1, "engine": {"cuda_graphs": {"mode": "decode"}}})",
     "/engine/cuda_graphs/mode", "needs at least one capture size"},
    {"cache_too_small",
     R"({"format": 1, "cache": {"num_blocks": 4, "block_size": 16},
         "workload": {"prompt_len": [8, 64], "new_tokens": [4, 16]}})",
     "/cache/num_blocks",
     "got 4, but the longest request (prompt 64 + 16 new tokens) needs 5 blocks of 16 plus the "
     "null block"},
    {"default_cache_too_small", R"({"format": 1, "workload": {"prompt_len": 2000}})",
     "/cache/num_blocks", "got 64 (the default), but the longest request"},
    {"request_too_long",
     R"({"format": 1, "workload": {"prompt_len": [1, 60000], "new_tokens": [1, 10000]}})",
     "/workload/new_tokens", "has 70000 tokens, above the limit of 65536"},
    {"shared_prefix_longer_than_prompt",
     R"({"format": 1, "workload": {"prompt_len": [16, 32], "prefix_groups": 2,
         "shared_prefix_len": 20}})",
     "/workload/shared_prefix_len", "got 20, but prompt_len.min = 16"},

    // ---- which error comes first ----
    {"format_checked_before_earlier_keys", R"({"cache": {"block_size": 0}, "format": 2})",
     "/format", "got 2"},
    {"model_relations_before_cache_relations",
     R"({"format": 1, "cache": {"dtype": "fp8_e4m3"}, "model": {"qk_rope_dim": 8}})",
     "/model/qk_rope_dim", "only applies to mla layers"},
    {"first_error_wins",
     R"({"format": 1, "workload": {"epochs": 0}, "cache": {"block_size": 0}})",
     "/workload/epochs", "got 0"},
    // ---- checks.reference / checks.sampled_requests ----
    {"bad_mode_suggestion", R"({"format": 1, "checks": {"reference": "sample"}})",
     "/checks/reference",
     R"(got "sample" (a string), expected one of "full", "sampled", "auto"; did you mean "sampled"?)"},
    {"mode_wrong_type", R"({"format": 1, "checks": {"reference": true}})", "/checks/reference",
     R"(got true (a boolean), expected one of "full", "sampled", "auto")"},
    {"zero_requests", R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 0}})",
     "/checks/sampled_requests", "got 0, expected an integer from 1 to 100000"},
    {"negative_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": -3}})",
     "/checks/sampled_requests", "got -3, expected an integer from 1 to 100000"},
    {"too_many_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 100001}})",
     "/checks/sampled_requests", "got 100001, expected an integer from 1 to 100000"},
    {"fractional_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 2.5}})",
     "/checks/sampled_requests", "got 2.5, expected an integer"},
    {"requests_with_default_full", R"({"format": 1, "checks": {"sampled_requests": 4}})",
     "/checks/sampled_requests",
     R"(got 4, but checks.reference is "full" (the default): every request is checked against )"
     R"(the reference, so there is no sample to size; remove sampled_requests or set )"
     R"(checks.reference to "sampled")"},
    {"requests_with_written_full",
     R"({"format": 1, "checks": {"sampled_requests": 4, "reference": "full"}})",
     "/checks/sampled_requests", R"(got 4, but checks.reference is "full": every request)"},
    {"misspelt_reference", R"({"format": 1, "checks": {"refrence": "sampled"}})",
     "/checks/refrence", R"(unknown key; did you mean "reference"?)"},
    {"misspelt_sampled_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sample_requests": 4}})",
     "/checks/sample_requests", R"(unknown key; did you mean "sampled_requests"?)"},
    {"reference_at_the_top_level", R"({"format": 1, "reference": "sampled"})", "/reference",
     "unknown key"},
    // ---- backend ----
    {"backend_without_library", R"({"format": 1, "backend": {"allow_fallback": true}})",
     "/backend/library", "missing; a backend names its plugin's library"},
    {"backend_empty_library", R"({"format": 1, "backend": {"library": ""}})", "/backend/library",
     R"(got "", expected the path of a backend plugin)"},
    {"backend_misspelt_op",
     R"({"format": 1, "backend": {"library": "x.so", "builtin_ops": ["paged_decod"]}})",
     "/backend/builtin_ops/0", R"(expected a backend op: "write_kv", )"},
    {"backend_op_suggestion",
     R"({"format": 1, "backend": {"library": "x.so", "builtin_ops": ["merge_state"]}})",
     "/backend/builtin_ops/0", R"(did you mean "merge_states"?)"},
    {"backend_op_twice",
     R"({"format": 1, "backend": {"library": "x.so",
         "builtin_ops": ["write_kv", "write_kv"]}})",
     "/backend/builtin_ops/1", R"(op "write_kv" is listed twice)"},
    {"backend_misspelt_key", R"({"format": 1, "backend": {"libary": "x.so"}})",
     "/backend/libary", R"(did you mean "library"?)"},
    {"backend_not_an_object", R"({"format": 1, "backend": "x.so"})", "/backend",
     "expected an object"},
};

INSTANTIATE_TEST_SUITE_P(Malformed, BadScenario, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(BadScenario, SharedPrefixIsFreeWithoutGroups) {
  // Only a grouped workload shares a prefix; without groups the length is not checked.
  const auto r = parse_scenario(
      R"({"format": 1, "workload": {"prompt_len": [4, 8], "shared_prefix_len": 100}})", "");
  EXPECT_TRUE(std::holds_alternative<Scenario>(r));
}

TEST(BadScenario, DeepNestingAndGarbageDoNotCrash) {
  // Refused where the 65th level opens, before anything deeper is built.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto r = parse_scenario(deep, "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  std::string pointer;
  for (int i = 0; i < 64; ++i) pointer += "/0";
  EXPECT_EQ(std::get<ScenarioError>(r).pointer, pointer);
  EXPECT_NE(std::get<ScenarioError>(r).message.find("nest deeper than 64 levels"),
            std::string::npos);

  const std::string bytes = "{\"format\": 1, \"name\": \"\xff\xfe\"}";
  const auto g = parse_scenario(bytes, "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(g));
  EXPECT_EQ(std::get<ScenarioError>(g).message.rfind("line 1, column ", 0), 0u);
}

}  // namespace
}  // namespace kv
