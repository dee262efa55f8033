// plugin_attention_test.cpp — the host plugin's ops on contiguous rows (varlen_attention,
// merge_states, linear_attention, quant_fp8), called through the ABI, give bit for bit what the
// kv::host ops give on identical inputs: padded row strides, empty and single-row sequences, GQA
// and MLA shapes, cache-precision keys, empty states, padded linear-attention rows, in-place
// quantisation. Outputs start as a poison NaN on both sides.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend_test_support.h"

namespace kv::test {
namespace {

class PluginAttention : public ::testing::Test {
 protected:
  const kvcheck_backend& plugin = host_plugin();
  backend::AbiBuilder build{kCpu};
  Rng rng{0xa77e};
};

struct VarlenCase {
  int32_t q_heads, kv_heads, head_dim, v_dim;
  DType kv_dtype;
  bool causal;
};

TEST_F(PluginAttention, VarlenAttentionGqaMlaAndCachePrecision) {
  const VarlenCase cases[] = {
      {4, 2, 5, 5, DType::f32, false},       // GQA 2
      {4, 2, 5, 5, DType::bf16, true},       // new tokens in the cache's precision
      {3, 1, 9, 6, DType::fp8_e4m3, false},  // MLA: v is k's rows, v_dim < head_dim
      {3, 3, 4, 4, DType::f16, true},        // GQA 1
      {2, 1, 7, 7, DType::fp8_e4m3, true},
  };
  for (const VarlenCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.q_heads << "/" << c.kv_heads << " heads, dtype "
                                      << static_cast<int>(c.kv_dtype) << ", causal " << c.causal);
    // Sequences of 3, 0, 1 and 5 queries; context keys 4, 2, 0 (a query that sees nothing), 7.
    const std::vector<int32_t> q_starts = {0, 3, 3, 4, 9};
    const std::vector<int32_t> k_starts =
        c.causal ? q_starts : std::vector<int32_t>{0, 4, 6, 6, 13};
    const int32_t rows = q_starts.back(), keys = k_starts.back();
    const int32_t q_stride = c.q_heads * c.head_dim + 2, kv_stride = c.kv_heads * c.head_dim + 3;
    const int32_t out_stride = c.q_heads * c.v_dim + 1;
    const std::vector<float> q = random_floats(rng, static_cast<size_t>(rows) * q_stride);
    const std::vector<float> k = random_floats(rng, static_cast<size_t>(keys) * kv_stride);
    const std::vector<float> v = random_floats(rng, static_cast<size_t>(keys) * kv_stride);
    std::vector<float> out = poisoned(static_cast<size_t>(rows) * out_stride), want = out;
    std::vector<float> lse = poisoned(static_cast<size_t>(rows) * c.q_heads), want_lse = lse;

    VarlenAttnArgs a{.q = q.data(), .q_row_stride = q_stride, .k = k.data(),
                     .v = c.v_dim < c.head_dim ? k.data() : v.data(), .kv_row_stride = kv_stride,
                     .q_starts = q_starts.data(), .k_starts = k_starts.data(),
                     .out = out.data(), .out_row_stride = out_stride, .lse = lse.data(),
                     .num_seqs = 4, .num_q_heads = c.q_heads, .num_kv_heads = c.kv_heads,
                     .head_dim = c.head_dim, .v_dim = c.v_dim, .scale = 0.41f,
                     .causal = c.causal, .kv_dtype = c.kv_dtype,
                     .k_scale = c.kv_dtype == DType::fp8_e4m3 ? 0.01f : 1.0f,
                     .v_scale = c.kv_dtype == DType::fp8_e4m3 ? 0.03f : 1.0f};
    ASSERT_EQ(call(plugin.varlen_attention, build.varlen_attention(a, rows, keys)), "");
    a.out = want.data();
    a.lse = want_lse.data();
    host::varlen_attention(a);
    EXPECT_EQ(bit_diff(out, want), "");
    EXPECT_EQ(bit_diff(lse, want_lse), "");
    if (!c.causal) {  // row 3 (sequence 2) sees no key: o = 0, lse -inf
      EXPECT_EQ(out[3 * out_stride], 0.0f);
      EXPECT_EQ(lse[3 * c.q_heads], -INFINITY);
    }
  }
}

TEST_F(PluginAttention, MergeStatesWithEmptyStatesAndACopiedSuffix) {
  const int32_t rows = 7, heads = 3, hd = 5, stride = heads * hd + 2;
  const std::vector<float> oa = random_floats(rng, rows * stride);
  const std::vector<float> ob = random_floats(rng, rows * stride);
  std::vector<float> la = random_floats(rng, rows * heads, -3.0f, 3.0f);
  std::vector<float> lb = random_floats(rng, rows * heads, -3.0f, 3.0f);
  la[1 * heads + 0] = lb[1 * heads + 0] = -INFINITY;  // both empty: o = 0, lse -inf
  la[2 * heads + 1] = -INFINITY;                      // no context
  for (bool with_lse : {true, false}) {
    std::vector<float> out = poisoned(rows * stride), want = out;
    std::vector<float> lse = poisoned(rows * heads), want_lse = lse;
    MergeStatesArgs a{.out_a = oa.data(), .lse_a = la.data(), .out_b = ob.data(),
                      .lse_b = lb.data(), .out = out.data(),
                      .lse = with_lse ? lse.data() : nullptr, .row_stride = stride,
                      .num_rows = rows, .num_merge = 4, .num_heads = heads, .head_dim = hd};
    ASSERT_EQ(call(plugin.merge_states, build.merge_states(a)), "");
    a.out = want.data();
    a.lse = with_lse ? want_lse.data() : nullptr;
    host::merge_states(a);
    EXPECT_EQ(bit_diff(out, want), "");
    EXPECT_EQ(bit_diff(lse, want_lse), "");
    EXPECT_EQ(out[1 * stride], 0.0f);
  }
}

TEST_F(PluginAttention, LinearAttentionWithPaddedAndFreshSequences) {
  const int32_t heads = 2, d = 3, blocks = 5, block_stride = heads * d * d + 4;
  // seq 0: 3 rows on state 2; seq 1: a padded row (state -1); seq 2: no rows on state 4;
  // seq 3: 2 rows, fresh (its state block 1 is poisoned and must not be read).
  const std::vector<int32_t> starts = {0, 3, 4, 4, 6}, states = {2, -1, 4, 1}, init = {1, 0, 1, 0};
  const int32_t rows = starts.back(), qkv_stride = heads * d + 1, gate_stride = heads + 2;
  std::vector<float> state = random_floats(rng, blocks * block_stride);
  std::fill(state.begin() + block_stride, state.begin() + 2 * block_stride, NAN);
  std::vector<float> want_state = state;
  const std::vector<float> q = random_floats(rng, rows * qkv_stride);
  const std::vector<float> k = random_floats(rng, rows * qkv_stride);
  const std::vector<float> v = random_floats(rng, rows * qkv_stride);
  const std::vector<float> gate = random_floats(rng, rows * gate_stride, -2.0f, 2.0f);
  std::vector<float> out = poisoned(rows * (heads * d + 3)), want = out;

  LinearAttnArgs a{.state = state.data(), .state_block_stride = block_stride, .q = q.data(),
                   .k = k.data(), .v = v.data(), .qkv_row_stride = qkv_stride,
                   .gate = gate.data(), .gate_row_stride = gate_stride, .out = out.data(),
                   .out_row_stride = heads * d + 3, .seq_starts = starts.data(),
                   .state_blocks = states.data(), .has_initial_state = init.data(),
                   .num_seqs = 4, .num_heads = heads, .head_dim = d, .scale = 0.5f};
  ASSERT_EQ(call(plugin.linear_attention, build.linear_attention(a, rows, blocks)), "");
  a.state = want_state.data();
  a.out = want.data();
  host::linear_attention(a);
  EXPECT_EQ(bit_diff(state, want_state), "");
  EXPECT_EQ(bit_diff(out, want), "");
  EXPECT_TRUE(is_poison(out[3 * (heads * d + 3)])) << "the padded row was written";
  EXPECT_TRUE(all_finite(&out[4 * (heads * d + 3)], heads * d)) << "a fresh state was read";
}

TEST_F(PluginAttention, QuantFp8OverTheRealRowsInPlaceOrNot) {
  const int32_t rows = 9, cols = 7, stride = 10;
  std::vector<float> x = random_floats(rng, rows * stride, -30.0f, 30.0f);
  x[7 * stride + 2] = NAN;  // a padded row's garbage, outside the amax rows
  const int32_t real_rows = 5;
  for (bool in_place : {false, true})
    for (bool rows_in_memory : {false, true}) {
      std::vector<float> xa = x, xb = x, ya = poisoned(x.size()), yb = ya;
      float scale_a = NAN, scale_b = NAN;
      QuantFp8Args a{.x = xa.data(), .y = in_place ? xa.data() : ya.data(), .row_stride = stride,
                     .cols = cols, .num_rows = rows,
                     .amax_rows = rows_in_memory ? &real_rows : nullptr,
                     .amax_rows_fixed = rows_in_memory ? 0 : real_rows, .scale_out = &scale_a};
      ASSERT_EQ(call(plugin.quant_fp8, build.quant_fp8(a)), "");
      a.x = xb.data();
      a.y = in_place ? xb.data() : yb.data();
      a.scale_out = &scale_b;
      host::quant_fp8(a);
      EXPECT_EQ(bit_diff(xa, xb), "");
      EXPECT_EQ(bit_diff(ya, yb), "");
      EXPECT_EQ(f32_bits(scale_a), f32_bits(scale_b));
      EXPECT_TRUE(std::isfinite(scale_a)) << "the padded row's NaN reached the scale";
    }
}

}  // namespace
}  // namespace kv::test
