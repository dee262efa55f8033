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
    {"unknown_nested_graph_key", R"({"format": 1, "engine": {"cuda_graphs": {"sizes": [1]}}})",
     "/engine/cuda_graphs/sizes", "unknown key"},

    // ---- types ----
    {"string_for_integer", R"({"format": 1, "model": {"num_q_heads": "4"}})",
     "/model/num_q_heads", R"(got "4" (a string), expected an integer from 1 to 64)"},
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
    {"int32_overflow", R"({"format": 1, "workload": {"prefix_groups": 4294967296}})",
     "/workload/prefix_groups", "got 4294967296, expected an integer from 0 to 2147483647"},
    {"int64_overflow", R"({"format": 1, "workload": {"prefix_groups": 99999999999999999999}})",
     "/workload/prefix_groups", "expected an integer from 0 to 2147483647"},
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

    // ---- enums ----
    {"bad_dtype_suggestion", R"({"format": 1, "cache": {"dtype": "fp16"}})", "/cache/dtype",
     R"(got "fp16" (a string), expected one of "f32", "f16", "bf16"; did you mean "f16"?)"},
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

    // ---- cross-field ----
    {"mla_not_supported", R"({"format": 1, "model": {"layers": ["attention", "mla"]}})",
     "/model/layers/1",
     R"(layer kind "mla" is not supported yet by this build (supported: attention))"},
    {"linear_not_supported", R"({"format": 1, "model": {"layers": ["linear"]}})",
     "/model/layers/0", R"(layer kind "linear" is not supported yet)"},
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
    {"first_error_wins",
     R"({"format": 1, "workload": {"epochs": 0}, "cache": {"block_size": 0}})",
     "/workload/epochs", "got 0"},
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
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto r = parse_scenario(deep, "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  EXPECT_EQ(std::get<ScenarioError>(r).pointer, "");

  const std::string bytes = "{\"format\": 1, \"name\": \"\xff\xfe\"}";
  const auto g = parse_scenario(bytes, "");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(g));
  EXPECT_EQ(std::get<ScenarioError>(g).message.rfind("line 1, column ", 0), 0u);
}

}  // namespace
}  // namespace kv
