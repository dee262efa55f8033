// plugin_cache_ops_test.cpp — the host plugin's cache ops (write_kv, gather_kv, fill_blocks),
// called through the ABI as kvcheck calls a plugin (AbiBuilder), give bit for bit what the kv::host
// ops give on an identical twin of the cache, for every cache kind of backend_test_support.h.
// Caches start as NaN codes and outputs as a poison NaN, so a byte left unwritten shows.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "backend_test_support.h"

namespace kv::test {
namespace {

class PluginCacheOps : public ::testing::TestWithParam<CacheKind> {
 protected:
  const kvcheck_backend& plugin = host_plugin();
  backend::AbiBuilder build{kCpu};
  Rng rng{0xcafe};
};

TEST_P(PluginCacheOps, WriteKvSkipsPaddedSlots) {
  const CacheKind& kind = GetParam();
  TestCache a = make_cache(kind, 9);
  TestCache b = twin(a);
  const int32_t tokens = 13, row = kind.kv_heads * kind.head_dim;
  // Distinct random slots outside block 0; every fourth token a padded row (-1).
  std::vector<int64_t> slots(static_cast<size_t>(8) * kind.block_size);
  std::iota(slots.begin(), slots.end(), kind.block_size);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(tokens);
  for (int32_t t = 0; t < tokens; t += 4) slots[t] = -1;
  const std::vector<float> k = random_floats(rng, static_cast<size_t>(tokens) * (row + 3));
  const std::vector<float> v = random_floats(rng, static_cast<size_t>(tokens) * (row + 1));

  WriteKvArgs args{.cache = a.desc, .k = k.data(), .v = kind.mla ? nullptr : v.data(),
                   .k_row_stride = row + 3, .v_row_stride = row + 1,
                   .slot_mapping = slots.data(), .num_tokens = tokens};
  ASSERT_EQ(call(plugin.write_kv, build.write_kv(args)), "");
  args.cache = b.desc;
  host::write_kv(args);
  EXPECT_EQ(bit_diff(a.storage, b.storage), "");
  EXPECT_NE(bit_diff(a.storage, make_cache(kind, 9).storage), "") << "nothing was written";
}

TEST_P(PluginCacheOps, GatherKvOfEmptySingleAndMultiBlockContexts) {
  const CacheKind& kind = GetParam();
  const int32_t bs = kind.block_size, row = kind.kv_heads * kind.head_dim;
  const std::vector<int32_t> lens = {0, 1, 2 * bs + 1, bs, 3};
  const int32_t stride = 4;  // blocks per table row: the longest needs 3
  const int32_t nb = blocks_needed(lens, bs) + 2;
  TestCache a = make_cache(kind, nb);
  const std::vector<int32_t> table = shuffled_tables(rng, nb, bs, lens, stride);
  std::vector<int32_t> starts(lens.size() + 1, 0);
  for (size_t s = 0; s < lens.size(); ++s) {
    starts[s + 1] = starts[s] + lens[s];
    const std::vector<float> k = random_floats(rng, static_cast<size_t>(lens[s]) * row);
    const std::vector<float> v = random_floats(rng, static_cast<size_t>(lens[s]) * row);
    store_sequence(a, &table[s * stride], lens[s], k.data(), kind.mla ? nullptr : v.data());
  }
  TestCache b = twin(a);
  const int32_t total = starts.back();
  std::vector<float> ka = poisoned(static_cast<size_t>(total) * row), va = ka, kb = ka, vb = ka;

  GatherKvArgs args{.cache = a.desc, .block_table = table.data(), .block_table_stride = stride,
                    .ctx_lens = lens.data(), .ctx_starts = starts.data(), .k_out = ka.data(),
                    .v_out = kind.mla ? nullptr : va.data(),
                    .num_seqs = static_cast<int32_t>(lens.size())};
  ASSERT_EQ(call(plugin.gather_kv, build.gather_kv(args, total)), "");
  args.cache = b.desc;
  args.k_out = kb.data();
  args.v_out = kind.mla ? nullptr : vb.data();
  host::gather_kv(args);
  EXPECT_EQ(bit_diff(ka, kb), "");
  EXPECT_EQ(bit_diff(va, vb), "");
  EXPECT_TRUE(all_finite(ka.data(), ka.size())) << "a context row was not gathered";
}

TEST_P(PluginCacheOps, FillBlocksEveryPattern) {
  const CacheKind& kind = GetParam();
  for (FillPattern p : {FillPattern::zero, FillPattern::nan, FillPattern::inf,
                        FillPattern::random_bits}) {
    SCOPED_TRACE(static_cast<int>(p));
    TestCache a = make_cache(kind, 7);
    const std::vector<int32_t> all = {1, 2, 3, 4, 5, 6};  // zeroed, so that NaN fills show
    host::fill_blocks(FillBlocksArgs{.cache = a.desc, .block_ids = all.data(), .num_ids = 6});
    TestCache b = twin(a);
    const std::vector<int32_t> ids = {5, 1, 3};
    FillBlocksArgs args{.cache = a.desc, .block_ids = ids.data(), .num_ids = 3, .pattern = p,
                        .seed = 0x5eedull};
    ASSERT_EQ(call(plugin.fill_blocks, build.fill_blocks(args)), "");
    args.cache = b.desc;
    host::fill_blocks(args);
    EXPECT_EQ(bit_diff(a.storage, b.storage), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, PluginCacheOps, ::testing::ValuesIn(cache_kinds()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kv::test
