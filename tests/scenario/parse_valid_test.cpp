// parse_valid_test.cpp — scenarios that must parse: every field set, every field defaulted, the
// short forms (a number for a range or a layer list), loading from a file.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "scenario/parse.h"
#include "tests/scenario/parse_ok.h"

namespace kv {
namespace {

constexpr std::string_view kFull = R"({
  "format": 1,
  "name": "full",
  "description": "every key set",
  "seed": 18446744073709551615,
  "model": {"layers": ["attention", "attention", "attention"], "num_q_heads": 8,
            "num_kv_heads": 2, "head_dim": 32, "hidden_size": 128, "vocab_size": 300,
            "weight_seed": 7},
  "cache": {"num_blocks": 100, "block_size": 8, "dtype": "f16", "layout": "kv_interleaved"},
  "engine": {"max_running_requests": 16, "max_tokens_per_step": 512, "prefix_caching": false,
             "zero_new_blocks": ["mla"],
             "cuda_graphs": {"mode": "decode", "capture_sizes": [1, 2, 4, 8, 16]},
             "zero_init_outputs": true, "max_decode_splits": 8},
  "workload": {"requests": 20, "prompt_len": [16, 64], "new_tokens": 12, "arrival_step": [0, 5],
               "prefix_groups": 3, "shared_prefix_len": 16, "epochs": 4},
  "faults": {"freed_blocks": "nan", "padded_rows": "inf", "unwritten_outputs": "random"},
  "regressions": ["new-blocks-not-zeroed", "padded-rows-in-reduction"],
  "checks": {"nonfinite": true, "drift": false, "tokens": false, "tolerance": 0.02},
  "expect": "corrupt"
})";

TEST(ParseScenario, FullScenarioSetsEveryField) {
  const Scenario s = parse_ok(kFull, "scenarios/full.json");
  EXPECT_EQ(s.format, 1);
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.description, "every key set");
  EXPECT_EQ(s.source_path, "scenarios/full.json");
  EXPECT_EQ(s.seed, 18446744073709551615ull);

  EXPECT_EQ(s.model.layers, std::vector<LayerKind>(3, LayerKind::attention));
  EXPECT_EQ(s.model.num_q_heads, 8);
  EXPECT_EQ(s.model.num_kv_heads, 2);
  EXPECT_EQ(s.model.head_dim, 32);
  EXPECT_EQ(s.model.hidden_size, 128);
  EXPECT_EQ(s.model.vocab_size, 300);
  EXPECT_EQ(s.model.weight_seed, 7u);

  EXPECT_EQ(s.cache.num_blocks, 100);
  EXPECT_EQ(s.cache.block_size, 8);
  EXPECT_EQ(s.cache.dtype, DType::f16);
  EXPECT_EQ(s.cache.layout, KvLayout::kv_interleaved);

  EXPECT_EQ(s.engine.max_running_requests, 16);
  EXPECT_EQ(s.engine.max_tokens_per_step, 512);
  EXPECT_FALSE(s.engine.prefix_caching);
  EXPECT_EQ(s.engine.zero_new_blocks, std::vector<LayerKind>{LayerKind::mla});
  EXPECT_EQ(s.engine.cuda_graphs.mode, GraphMode::decode);
  EXPECT_EQ(s.engine.cuda_graphs.capture_sizes, (std::vector<int32_t>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(s.engine.zero_init_outputs);
  EXPECT_EQ(s.engine.max_decode_splits, 8);

  EXPECT_EQ(s.workload.num_requests, 20);
  EXPECT_EQ(s.workload.prompt_len.min, 16);
  EXPECT_EQ(s.workload.prompt_len.max, 64);
  EXPECT_EQ(s.workload.new_tokens.min, 12);  // a single number n means [n, n]
  EXPECT_EQ(s.workload.new_tokens.max, 12);
  EXPECT_EQ(s.workload.arrival_step.min, 0);
  EXPECT_EQ(s.workload.arrival_step.max, 5);
  EXPECT_EQ(s.workload.prefix_groups, 3);
  EXPECT_EQ(s.workload.shared_prefix_len, 16);
  EXPECT_EQ(s.workload.epochs, 4);

  EXPECT_EQ(s.faults.freed_blocks, PoisonPattern::nan);
  EXPECT_EQ(s.faults.padded_rows, PoisonPattern::inf);
  EXPECT_EQ(s.faults.unwritten_outputs, PoisonPattern::random_bits);

  EXPECT_EQ(s.regressions, (RegressionSet{Regression::new_blocks_not_zeroed,
                                           Regression::padded_rows_in_reduction}));
  EXPECT_TRUE(s.checks.nonfinite);
  EXPECT_FALSE(s.checks.drift);
  EXPECT_FALSE(s.checks.tokens);
  ASSERT_TRUE(s.checks.tolerance.has_value());
  EXPECT_DOUBLE_EQ(*s.checks.tolerance, 0.02);
  EXPECT_EQ(s.expect, Expectation::corrupt);
}

TEST(ParseScenario, MinimalScenarioGetsEveryDefault) {
  const Scenario s = parse_ok(R"({"format": 1})", "some/dir/smoke.v2.json");
  EXPECT_EQ(s.name, "smoke.v2");  // the file's stem
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.seed, 0u);
  EXPECT_EQ(s.model.layers, std::vector<LayerKind>(2, LayerKind::attention));
  EXPECT_EQ(s.model.num_q_heads, 4);
  EXPECT_EQ(s.model.num_kv_heads, 2);
  EXPECT_EQ(s.model.head_dim, 16);
  EXPECT_EQ(s.model.hidden_size, 64);
  EXPECT_EQ(s.model.vocab_size, 128);
  EXPECT_EQ(s.model.weight_seed, 1u);
  EXPECT_EQ(s.model.kv_lora_rank, 512);
  EXPECT_EQ(s.model.qk_rope_dim, 64);
  EXPECT_EQ(s.cache.num_blocks, 64);
  EXPECT_EQ(s.cache.block_size, 16);
  EXPECT_EQ(s.cache.dtype, DType::bf16);
  EXPECT_EQ(s.cache.layout, KvLayout::kv_separate);
  EXPECT_EQ(s.cache.pool, PoolKind::per_layer);
  EXPECT_EQ(s.cache.k_scale, 1.0f);
  EXPECT_EQ(s.cache.v_scale, 1.0f);
  EXPECT_EQ(s.engine.max_running_requests, 8);
  EXPECT_EQ(s.engine.max_tokens_per_step, 256);
  EXPECT_TRUE(s.engine.prefix_caching);
  EXPECT_EQ(s.engine.zero_new_blocks,
            (std::vector<LayerKind>{LayerKind::attention, LayerKind::mla}));
  EXPECT_EQ(s.engine.cuda_graphs.mode, GraphMode::off);
  EXPECT_TRUE(s.engine.cuda_graphs.capture_sizes.empty());
  EXPECT_FALSE(s.engine.zero_init_outputs);
  EXPECT_EQ(s.engine.max_decode_splits, 4);
  EXPECT_EQ(s.workload.num_requests, 8);
  EXPECT_EQ(s.workload.prompt_len.min, 8);
  EXPECT_EQ(s.workload.prompt_len.max, 32);
  EXPECT_EQ(s.workload.new_tokens.min, 4);
  EXPECT_EQ(s.workload.new_tokens.max, 16);
  EXPECT_EQ(s.workload.arrival_step.max, 0);
  EXPECT_EQ(s.workload.epochs, 1);
  EXPECT_EQ(s.faults.freed_blocks, PoisonPattern::none);
  EXPECT_TRUE(s.regressions.empty());
  EXPECT_TRUE(s.checks.nonfinite && s.checks.drift && s.checks.tokens);
  EXPECT_FALSE(s.checks.tolerance.has_value());
  EXPECT_EQ(s.expect, Expectation::clean);
}

// Every field of the MLA / linear-attention / fp8 part of the format, set at once.
constexpr std::string_view kHybridFp8 = R"({
  "format": 1,
  "model": {"layers": ["attention", "linear", "mla", "linear"], "kv_lora_rank": 128,
            "qk_rope_dim": 0},
  "cache": {"dtype": "fp8_e4m3", "layout": "kv_interleaved", "pool": "hybrid", "k_scale": 0.25,
            "v_scale": 4},
  "engine": {"prefix_caching": false}
})";

TEST(ParseScenario, HybridFp8ScenarioSetsEveryNewField) {
  const Scenario s = parse_ok(kHybridFp8);
  EXPECT_EQ(s.model.layers, (std::vector<LayerKind>{LayerKind::attention, LayerKind::linear,
                                                    LayerKind::mla, LayerKind::linear}));
  EXPECT_EQ(s.model.kv_lora_rank, 128);
  EXPECT_EQ(s.model.qk_rope_dim, 0);  // an MLA without a positional key part
  EXPECT_EQ(s.cache.dtype, DType::fp8_e4m3);
  EXPECT_EQ(s.cache.layout, KvLayout::kv_interleaved);
  EXPECT_EQ(s.cache.pool, PoolKind::hybrid);
  EXPECT_EQ(s.cache.k_scale, 0.25f);
  EXPECT_EQ(s.cache.v_scale, 4.0f);  // an integral number is a number too
  EXPECT_FALSE(s.engine.prefix_caching);
}

TEST(ParseScenario, MlaLayersGetTheDefaultDimensions) {
  const Scenario s = parse_ok(R"({"format": 1, "model": {"layers": ["mla", "mla"]}})");
  EXPECT_EQ(s.model.layers, std::vector<LayerKind>(2, LayerKind::mla));
  EXPECT_EQ(s.model.kv_lora_rank, 512);
  EXPECT_EQ(s.model.qk_rope_dim, 64);
  EXPECT_EQ(s.cache.pool, PoolKind::per_layer);
}

TEST(ParseScenario, MlaDimensionsAtTheirBounds) {
  const Scenario lo = parse_ok(R"({"format": 1, "model": {"layers": ["mla"], "kv_lora_rank": 2,
                                                          "qk_rope_dim": 0}})");
  EXPECT_EQ(lo.model.kv_lora_rank, 2);
  EXPECT_EQ(lo.model.qk_rope_dim, 0);
  const Scenario hi = parse_ok(R"({"format": 1, "model": {"layers": ["mla"],
                                                          "kv_lora_rank": 1024,
                                                          "qk_rope_dim": 256}})");
  EXPECT_EQ(hi.model.kv_lora_rank, 1024);
  EXPECT_EQ(hi.model.qk_rope_dim, 256);
}

TEST(ParseScenario, HybridPoolWithoutAttentionLayersMayKeepTheKvSeparateLayout) {
  // Only attention layers split a block into K and V; MLA caches one latent row per token.
  const Scenario s = parse_ok(R"({"format": 1, "model": {"layers": ["mla", "linear"]},
                                  "cache": {"pool": "hybrid"},
                                  "engine": {"prefix_caching": false}})");
  EXPECT_EQ(s.cache.pool, PoolKind::hybrid);
  EXPECT_EQ(s.cache.layout, KvLayout::kv_separate);
}

// Prefix caching on a hybrid pool: hits share the KV blocks and recompute the linear layers'
// state (scheduler.h); the default (true) stands.
TEST(ParseScenario, HybridPoolWithPrefixCaching) {
  const Scenario s = parse_ok(R"({"format": 1, "model": {"layers": ["mla", "linear"]},
                                  "cache": {"pool": "hybrid"}})");
  EXPECT_TRUE(s.engine.prefix_caching);
  const Scenario w = parse_ok(R"({"format": 1, "model": {"layers": ["linear", "attention"]},
                                  "cache": {"pool": "hybrid", "layout": "kv_interleaved"},
                                  "engine": {"prefix_caching": true}})");
  EXPECT_TRUE(w.engine.prefix_caching);
}

TEST(ParseScenario, Fp8ScalesKeepTheirFloatValue) {
  const Scenario s = parse_ok(R"({"format": 1, "cache": {"dtype": "fp8_e4m3",
                                  "k_scale": 0.0625, "v_scale": 1.7014118346046923e+38}})");
  EXPECT_EQ(s.cache.k_scale, 0.0625f);
  EXPECT_EQ(s.cache.v_scale, 0x1p127f);  // the largest power of two a float holds
}

// Real shapes (issue 21): DeepSeek-V3's 128 MLA query heads, Llama-3.1-405B's 128 over 8 KV heads,
// and the format's bound, 256.
TEST(ParseScenario, RealHeadCountsAreAccepted) {
  const Scenario mla = parse_ok(R"({"format": 1, "model": {"layers": ["mla"], "num_q_heads": 128,
                                                           "num_kv_heads": 1}})");
  EXPECT_EQ(mla.model.num_q_heads, 128);
  const Scenario gqa = parse_ok(R"({"format": 1, "model": {"num_q_heads": 128,
                                                           "num_kv_heads": 8}})");
  EXPECT_EQ(gqa.model.num_kv_heads, 8);
  const Scenario most = parse_ok(R"({"format": 1, "model": {"num_q_heads": 256,
                                                            "num_kv_heads": 256}})");
  EXPECT_EQ(most.model.num_kv_heads, 256);
}

// Real head dims (issue 21): 192, DeepSeek-V3's query/key head as plain attention, and its MLA
// (head_dim 128 + qk_rope_dim 64 per head over a 512 + 64 = 576-wide latent row).
TEST(ParseScenario, RealHeadDimsAreAccepted) {
  const Scenario gqa = parse_ok(R"({"format": 1, "model": {"num_q_heads": 8, "num_kv_heads": 2,
                                                           "head_dim": 192}})");
  EXPECT_EQ(gqa.model.head_dim, 192);
  const Scenario mla = parse_ok(R"({"format": 1, "model": {"layers": ["mla"], "head_dim": 128,
                                                           "kv_lora_rank": 512,
                                                           "qk_rope_dim": 64}})");
  EXPECT_EQ(mla.model.head_dim + mla.model.qk_rope_dim, 192);
  EXPECT_EQ(mla.model.kv_lora_rank + mla.model.qk_rope_dim, 576);
}

// Calibrated scales (amax / 448 of a real model's K and V) are rarely powers of two; the model
// makes its constant features power-of-two multiples of them (model_weights.h).
TEST(ParseScenario, CalibratedFp8ScalesAreAccepted) {
  const Scenario s = parse_ok(R"({"format": 1, "cache": {"dtype": "fp8_e4m3",
                                  "k_scale": 0.0173, "v_scale": 0.0917}})");
  EXPECT_EQ(s.cache.k_scale, 0.0173f);
  EXPECT_EQ(s.cache.v_scale, 0.0917f);
}

TEST(ParseScenario, NameDefaultsWithoutAPath) {
  EXPECT_EQ(parse_ok(R"({"format": 1})").name, "scenario");
}

TEST(ParseScenario, ShortFormsAndIntegralFloats) {
  const Scenario s = parse_ok(R"({"format": 1.0, "model": {"layers": 5, "head_dim": 64.0},
                                  "engine": {"zero_new_blocks": []}})");
  EXPECT_EQ(s.model.layers, std::vector<LayerKind>(5, LayerKind::attention));
  EXPECT_EQ(s.model.head_dim, 64);  // 64.0 is an integral number, as in JSON Schema
  EXPECT_TRUE(s.engine.zero_new_blocks.empty());
}

TEST(ParseScenario, CacheExactlyLargeEnoughForTheLongestRequest) {
  // 64 + 16 tokens = 5 blocks of 16, plus the null block: 6 is the smallest pool that works.
  EXPECT_EQ(parse_ok(R"({"format": 1, "cache": {"num_blocks": 6, "block_size": 16},
                         "workload": {"prompt_len": [8, 64], "new_tokens": [1, 16]}})")
                .cache.num_blocks,
            6);
}

TEST(ParseScenario, CacheExactlyLargeEnoughWithAStateBlock) {
  // 5 KV blocks + 1 block of linear-attention state + the null block: 7 is the smallest pool.
  EXPECT_EQ(parse_ok(R"({"format": 1, "model": {"layers": ["linear", "mla"]},
                         "cache": {"pool": "hybrid", "num_blocks": 7, "block_size": 16},
                         "engine": {"prefix_caching": false},
                         "workload": {"prompt_len": [8, 64], "new_tokens": [1, 16]}})")
                .cache.num_blocks,
            7);
}

TEST(ParseScenario, EnumsPrintAsTheyAreSpelt) {
  EXPECT_STREQ(to_string(LayerKind::mla), "mla");
  EXPECT_STREQ(to_string(DType::bf16), "bf16");
  EXPECT_STREQ(to_string(DType::fp8_e4m3), "fp8_e4m3");
  EXPECT_STREQ(to_string(LayerKind::linear), "linear");
  EXPECT_STREQ(to_string(KvLayout::kv_separate), "kv_separate");
  EXPECT_STREQ(to_string(KvLayout::kv_interleaved), "kv_interleaved");
  EXPECT_STREQ(to_string(PoolKind::per_layer), "per_layer");
  EXPECT_STREQ(to_string(PoolKind::hybrid), "hybrid");
  EXPECT_STREQ(to_string(GraphMode::decode), "decode");
  EXPECT_STREQ(to_string(PoisonPattern::random_bits), "random");
  EXPECT_STREQ(to_string(Expectation::corrupt), "corrupt");
}

class LoadScenario : public ::testing::Test {
 protected:
  // One folder per test and process: ctest -j runs these tests at once, and one's TearDown must
  // not remove another's files.
  std::filesystem::path dir_ =
      std::filesystem::path(::testing::TempDir()) /
      ("kvcheck-load-test-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(LoadScenario, ReadsAFileAndNamesItAfterIt) {
  const auto r = load_scenario(write("tiny-cache.json", R"({"format": 1, "seed": 3})"));
  ASSERT_TRUE(std::holds_alternative<Scenario>(r));
  EXPECT_EQ(std::get<Scenario>(r).name, "tiny-cache");
  EXPECT_EQ(std::get<Scenario>(r).seed, 3u);
}

TEST_F(LoadScenario, MissingFileAndDirectoryAreClearErrors) {
  const std::string missing = (dir_ / "nope.json").string();
  const auto r = load_scenario(missing);
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  EXPECT_EQ(format_error(std::get<ScenarioError>(r), missing), missing + ": no such file");

  const auto d = load_scenario(dir_.string());
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(d));
  EXPECT_EQ(std::get<ScenarioError>(d).message, "is a directory, not a regular file");
}

TEST_F(LoadScenario, EmptyFileIsASyntaxErrorAtLineOne) {
  const auto r = load_scenario(write("empty.json", ""));
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r));
  EXPECT_EQ(std::get<ScenarioError>(r).message.rfind("line 1, column 1: ", 0), 0u)
      << std::get<ScenarioError>(r).message;
}

TEST(FormatError, JoinsPathPointerAndMessage) {
  EXPECT_EQ(format_error({"/cache/block_size", "got 0, expected an integer from 1 to 256"},
                         "scenarios/x.json"),
            "scenarios/x.json: /cache/block_size: got 0, expected an integer from 1 to 256");
  EXPECT_EQ(format_error({"", "line 2, column 3: oops"}, "x.json"),
            "x.json: line 2, column 3: oops");
  EXPECT_EQ(format_error({"/seed", "bad"}, ""), "/seed: bad");
}

}  // namespace
}  // namespace kv
