// plugin_decode_test.cpp — the host plugin's decode, as kvcheck drives a plugin: paged_decode_plan
// into a plan buffer, then paged_decode with the plan and the workspace the plugin asked for. Its
// output is bit for bit kv::host::paged_decode's, fed plan_decode_splits_for()'s metadata, over a
// twin of the cache: block sizes 1, 3, 7, 16; odd batches with a padded row (seq_len 0) and a
// single-token row; GQA ratios 1 to 4; plain, interleaved and MLA latent caches; f32, f16, bf16
// and fp8. Its optional lse is the split states folded as the op folds them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend_test_support.h"
#include "kernels/attn_state.cuh"
#include "kernels/decode_splits.h"

namespace kv::test {
namespace {

struct DecodeCase {
  const char* name;
  CacheKind cache;
  int32_t rows, q_heads, v_dim, max_splits;  // v_dim 0: head_dim
};

void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

const std::vector<DecodeCase> kCases = {
    {"f32_bs1_gqa1", {"", DType::f32, KvLayout::kv_separate, false, 1, 2, 4}, 5, 2, 0, 3},
    {"bf16_bs3_gqa3", {"", DType::bf16, KvLayout::kv_separate, false, 3, 2, 5}, 7, 6, 0, 2},
    {"fp8_bs7_gqa4", {"", DType::fp8_e4m3, KvLayout::kv_separate, false, 7, 1, 8}, 9, 4, 0, 4},
    {"f16_interleaved_bs16", {"", DType::f16, KvLayout::kv_interleaved, false, 16, 2, 6}, 3, 4, 6,
     2},
    {"bf16_interleaved_one_row", {"", DType::bf16, KvLayout::kv_interleaved, false, 3, 2, 4}, 1, 2,
     0, 3},
    {"fp8_interleaved_bs3", {"", DType::fp8_e4m3, KvLayout::kv_interleaved, false, 3, 2, 4}, 11, 2,
     0, 5},
    {"fp8_mla_bs16", {"", DType::fp8_e4m3, KvLayout::kv_separate, true, 16, 1, 11}, 5, 3, 8, 2},
    {"bf16_mla_bs7", {"", DType::bf16, KvLayout::kv_separate, true, 7, 1, 9}, 11, 2, 6, 3},
    {"f32_mla_bs1", {"", DType::f32, KvLayout::kv_separate, true, 1, 1, 6}, 3, 1, 4, 1},
};

// One decode step's inputs over a cache the test filled, and its twin for the direct call.
struct DecodeStep {
  const DecodeCase& c;
  Rng rng{0xdec0de};
  std::vector<int32_t> lens, table;
  int32_t stride = 0, vd = 0, q_stride = 0, out_stride = 0;
  TestCache cache, twin_cache;
  std::vector<float> q;

  explicit DecodeStep(const DecodeCase& dc) : c(dc) {
    const CacheKind& k = c.cache;
    const int32_t bs = k.block_size, row = k.kv_heads * k.head_dim;
    lens = row_lengths(rng, c.rows, bs, 4 * bs + 2);  // row 0 padded, row 1 a single token
    stride = (4 * bs + 2 + bs - 1) / bs + 1;
    const int32_t nb = blocks_needed(lens, bs) + 2;
    cache = make_cache(k, nb);
    table = shuffled_tables(rng, nb, bs, lens, stride);
    for (int32_t r = 0; r < c.rows; ++r) {
      const std::vector<float> kr = random_floats(rng, static_cast<size_t>(lens[r]) * row);
      const std::vector<float> vr = random_floats(rng, static_cast<size_t>(lens[r]) * row);
      store_sequence(cache, &table[r * stride], lens[r], kr.data(), k.mla ? nullptr : vr.data());
    }
    twin_cache = twin(cache);
    vd = c.v_dim == 0 ? k.head_dim : c.v_dim;
    q_stride = c.q_heads * k.head_dim + 3;
    out_stride = c.q_heads * vd + 1;
    q = random_floats(rng, static_cast<size_t>(c.rows) * q_stride);
  }

  PagedDecodeArgs args(const PagedKv& kv, float* out) const {
    return PagedDecodeArgs{.cache = kv, .q = q.data(), .q_row_stride = q_stride, .out = out,
                           .out_row_stride = out_stride, .block_table = table.data(),
                           .block_table_stride = stride, .seq_lens = lens.data(),
                           .max_splits = c.max_splits, .num_rows = c.rows,
                           .num_q_heads = c.q_heads, .v_dim = c.v_dim, .scale = 0.37f};
  }

  std::vector<int32_t> builtin_plan() const {
    return plan_decode_splits_for(c.cache.dtype, lens, c.cache.block_size, c.max_splits);
  }

  DecodePlanArgs plan_args(std::vector<int32_t>& plan, size_t bytes) const {
    return DecodePlanArgs{.seq_lens_host = lens.data(), .num_rows = c.rows,
                          .block_size = c.cache.block_size, .cache_dtype = c.cache.dtype,
                          .max_splits = c.max_splits, .num_q_heads = c.q_heads,
                          .num_kv_heads = c.cache.kv_heads, .head_dim = c.cache.head_dim,
                          .v_dim = vd, .plan = plan.data(), .plan_bytes = bytes,
                          .max_blocks_per_seq = stride};
  }

  // What the plan buffer and the workspace are sized for: `rows` decode rows of this shape.
  kvcheck_size_query query(int32_t rows) const {
    std::vector<int32_t> none;
    DecodePlanArgs shape = plan_args(none, 0);
    shape.num_rows = rows;
    return backend::size_query(shape);
  }
};

class PluginDecode : public ::testing::TestWithParam<DecodeCase> {
 protected:
  const kvcheck_backend& plugin = host_plugin();
  backend::AbiBuilder build{kCpu};
};

TEST_P(PluginDecode, PlanThenDecodeIsBitIdenticalToTheHostOp) {
  DecodeStep s(GetParam());
  const DecodeCase& c = GetParam();
  // The plan step, into a buffer sized as the plugin asks, for this step's rows.
  const kvcheck_size_query q = s.query(c.rows);
  const size_t plan_bytes = plugin.plan_bytes(plugin.self, &q);
  std::vector<int32_t> plan(plan_bytes / sizeof(int32_t) + 2, -7);
  ASSERT_EQ(call(plugin.paged_decode_plan, build.decode_plan(s.plan_args(plan, plan_bytes))), "");
  const std::vector<int32_t> meta = s.builtin_plan();
  ASSERT_EQ(std::vector<int32_t>(plan.begin(), plan.begin() + meta.size()), meta);
  EXPECT_EQ(plan[meta.size()], -7) << "the plan step wrote past its plan";

  // The plugin's decode, with a workspace sized for more rows than the step has (graph capture).
  const kvcheck_size_query wq = s.query(c.rows + 2);
  const size_t ws_bytes = plugin.workspace_bytes(plugin.self, &wq);
  std::vector<float> ws = poisoned(ws_bytes / sizeof(float));
  std::vector<float> out = poisoned(static_cast<size_t>(c.rows) * s.out_stride);
  std::vector<float> lse = poisoned(static_cast<size_t>(c.rows) * c.q_heads);
  const backend::DecodeBuffers bufs{.plan = plan.data(), .plan_bytes = plan_bytes,
                                    .workspace = ws.data(), .workspace_bytes = ws_bytes,
                                    .lse = lse.data()};
  ASSERT_EQ(call(plugin.paged_decode, build.paged_decode(s.args(s.cache.desc, out.data()), bufs)),
            "");

  // kv::host directly, on the twin, with the built-in planner's metadata.
  const size_t partials = static_cast<size_t>(c.rows) * c.max_splits * c.q_heads;
  std::vector<float> want = poisoned(out.size());
  std::vector<float> partial_out = poisoned(partials * s.vd), partial_lse = poisoned(partials);
  PagedDecodeArgs d = s.args(s.twin_cache.desc, want.data());
  d.split_meta = meta.data();
  d.partial_out = partial_out.data();
  d.partial_lse = partial_lse.data();
  host::paged_decode(d);

  EXPECT_EQ(bit_diff(out, want), "");
  EXPECT_EQ(bit_diff(s.cache.storage, s.twin_cache.storage), "") << "decode wrote the cache";
  for (int32_t r = 0; r < c.rows; ++r) {
    const float* o = &out[static_cast<size_t>(r) * s.out_stride];
    const size_t n = static_cast<size_t>(c.q_heads) * s.vd;
    if (s.lens[r] == 0) {
      EXPECT_TRUE(std::all_of(o, o + n, is_poison)) << "padded row " << r << " was written";
    } else {
      EXPECT_TRUE(all_finite(o, n)) << "row " << r << " of " << s.lens[r] << " tokens";
    }
  }
  // lse: the row's split states merged in split order; padded rows untouched.
  for (int32_t r = 0; r < c.rows; ++r)
    for (int32_t h = 0; h < c.q_heads; ++h) {
      const float got = lse[static_cast<size_t>(r) * c.q_heads + h];
      if (s.lens[r] == 0) {
        EXPECT_TRUE(is_poison(got));
        continue;
      }
      float fold = -INFINITY;
      for (int32_t sp = 0; sp < meta[kDecodeMetaHeader + r]; ++sp)
        fold = merge_weights(fold, partial_lse[(static_cast<size_t>(r) * c.max_splits + sp) *
                                                   c.q_heads + h]).lse;
      EXPECT_EQ(f32_bits(got), f32_bits(fold)) << "row " << r << " head " << h;
      EXPECT_TRUE(std::isfinite(got));
    }
}

TEST_P(PluginDecode, RefusesAShortPlanAMissingPlanAndAShortWorkspace) {
  DecodeStep s(GetParam());
  const DecodeCase& c = GetParam();
  std::vector<int32_t> plan(c.rows + 1);
  const kvcheck_size_query q = s.query(c.rows - 1);
  const size_t short_bytes = plugin.plan_bytes(plugin.self, &q);
  EXPECT_NE(call(plugin.paged_decode_plan, build.decode_plan(s.plan_args(plan, short_bytes)))
                .find("plan: " + std::to_string(short_bytes) + " bytes, the plan of"),
            std::string::npos);

  std::vector<float> out = poisoned(static_cast<size_t>(c.rows) * s.out_stride);
  std::vector<float> ws(1 << 16);
  std::vector<int32_t> meta = s.builtin_plan();
  backend::DecodeBuffers bufs{.workspace = ws.data(), .workspace_bytes = ws.size() * 4};
  EXPECT_NE(call(plugin.paged_decode, build.paged_decode(s.args(s.cache.desc, out.data()), bufs))
                .find("paged_decode: plan: absent"),
            std::string::npos);
  bufs.plan = meta.data();
  bufs.plan_bytes = meta.size() * sizeof(int32_t);
  bufs.workspace_bytes = decode_workspace_bytes(c.rows, c.q_heads, s.vd, 1) - 4;
  const std::string why =
      call(plugin.paged_decode, build.paged_decode(s.args(s.cache.desc, out.data()), bufs));
  EXPECT_NE(why.find("paged_decode: workspace: "), std::string::npos) << why;
}

INSTANTIATE_TEST_SUITE_P(Cases, PluginDecode, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kv::test
