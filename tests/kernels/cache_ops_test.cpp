// cache_ops_test.cpp — write_kv, gather_kv and fill_blocks against addresses computed here from
// the layout definitions (not through paged_kv.cuh), on both layouts and every cache dtype; the
// K-only forms (v == nullptr / v_out == nullptr) MLA uses.
#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kv::test {
namespace {

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3};
const KvLayout kLayouts[] = {KvLayout::kv_separate, KvLayout::kv_interleaved};

// Runs `body(layout, dtype, block_size)` on both layouts, every cache dtype and block sizes 1 to 16.
template <class Body>
void for_each_cache_shape(Body body) {
  for (KvLayout layout : kLayouts)
    for (DType dt : kDtypes)
      for (int32_t bs : {1, 3, 7, 16}) {
        SCOPED_TRACE(testing::Message()
                     << dtype_name(dt) << " layout " << int(layout) << " bs " << bs);
        body(layout, dt, bs);
      }
}

// Element index (from the start of the layer's buffer) of K or V, by the layout's definition.
int64_t elem_index(KvLayout layout, int32_t num_blocks, int64_t page, int32_t kvh, int32_t hd,
                   bool is_v, int64_t block, int64_t entry, int64_t head, int64_t feat) {
  const int64_t in_page = entry * kvh * hd + head * hd + feat;
  if (layout == KvLayout::kv_separate)
    return (is_v ? num_blocks * page : 0) + block * page + in_page;
  return block * 2 * page + (is_v ? page : 0) + in_page;
}

TEST(WriteKv, StoresEveryRowAtItsSlotAndNothingElse) {
  Rng rng(11);
  for_each_cache_shape([&](KvLayout layout, DType dt, int32_t bs) {
    const int32_t nb = 9, kvh = 2, hd = 12, tokens = 23, stride = kvh * hd + 5;
    TestCache c = make_test_cache(layout, dt, nb, bs, kvh, hd);
    if (dt == DType::fp8_e4m3) c.desc.k_scale = 0.25f, c.desc.v_scale = 0.0625f;
    const std::vector<uint64_t> before = c.storage;
    // Distinct random slots, some rows padded (-1).
    std::vector<int64_t> all(nb * bs);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int64_t> slots(tokens);  // rows past the cache's slots are padded too
    for (int32_t t = 0; t < tokens; ++t) slots[t] = (t % 4 == 3 || t >= nb * bs) ? -1 : all[t];
    const std::vector<float> k = random_floats(rng, tokens * stride, -3, 3);
    const std::vector<float> v = random_floats(rng, tokens * stride, -3, 3);
    WriteKvArgs w{c.desc, k.data(), v.data(), stride, stride, slots.data(), tokens};
    host::write_kv(w);

    // Expected buffer: the poisoned original with each row stored at its slot.
    std::vector<uint64_t> want = before;
    const int64_t page = static_cast<int64_t>(bs) * kvh * hd;
    for (int32_t t = 0; t < tokens; ++t) {
      if (slots[t] < 0) continue;
      for (int32_t h = 0; h < kvh; ++h)
        for (int32_t f = 0; f < hd; ++f) {
          const int64_t b = slots[t] / bs, e = slots[t] % bs;
          store_from_f32(want.data(), elem_index(layout, nb, page, kvh, hd, false, b, e, h, f),
                         dt, k[t * stride + h * hd + f] / c.desc.k_scale);
          store_from_f32(want.data(), elem_index(layout, nb, page, kvh, hd, true, b, e, h, f),
                         dt, v[t * stride + h * hd + f] / c.desc.v_scale);
        }
    }
    EXPECT_TRUE(want == c.storage);
  });
}

// Gathered rows equal the logical K/V rounded through the cache: the conversion is exact, so the
// comparison is bitwise.
TEST(GatherKv, EqualsLogicalContextOnBothLayouts) {
  Rng rng(12);
  for_each_cache_shape([&](KvLayout layout, DType dt, int32_t bs) {
    const int32_t kvh = 2, hd = 12, row = kvh * hd;
    const std::vector<int32_t> lens = {5, 0, 1, bs + 2, 3 * bs};
    const int32_t stride = 9;  // more table entries than any sequence uses (at most 5)
    const int32_t nb = blocks_needed(lens, bs) + 3;
    TestCache c = make_test_cache(layout, dt, nb, bs, kvh, hd);
    if (dt == DType::fp8_e4m3) c.desc.k_scale = 0.5f, c.desc.v_scale = 0.125f;
    const std::vector<int32_t> table = shuffled_tables(rng, nb, bs, lens, stride);
    std::vector<int32_t> starts = {0};
    for (int32_t l : lens) starts.push_back(starts.back() + l);
    const int32_t total = starts.back();
    const std::vector<float> k = random_floats(rng, total * row, -2, 2);
    const std::vector<float> v = random_floats(rng, total * row, -2, 2);
    for (size_t s = 0; s < lens.size(); ++s)
      store_sequence(c, &table[s * stride], lens[s], &k[starts[s] * row], &v[starts[s] * row]);

    std::vector<float> ko(total * row + 7), vo(total * row + 7);
    poison(ko);
    poison(vo);
    GatherKvArgs g{c.desc,        table.data(), stride,   lens.data(),
                   starts.data(), ko.data(),    vo.data(), static_cast<int32_t>(lens.size())};
    host::gather_kv(g);
    for (int32_t i = 0; i < total * row; ++i) {
      ASSERT_EQ(f32_bits(ko[i]), f32_bits(cache_round(k[i], dt, c.desc.k_scale))) << i;
      ASSERT_EQ(f32_bits(vo[i]), f32_bits(cache_round(v[i], dt, c.desc.v_scale))) << i;
    }
    for (int32_t i = total * row; i < total * row + 7; ++i)
      EXPECT_TRUE(is_poison(ko[i]) && is_poison(vo[i]));

    // The seed-004 bug: right on the plain layout, wrong on the interleaved one.
    std::vector<float> kb(ko.size()), vb(vo.size());
    poison(kb);
    poison(vb);
    g.k_out = kb.data();
    g.v_out = vb.data();
    g.cache = with_shape_strides(c.desc);
    host::gather_kv(g);
    const bool same = memcmp(kb.data(), ko.data(), kb.size() * 4) == 0 &&
                      memcmp(vb.data(), vo.data(), vb.size() * 4) == 0;
    EXPECT_EQ(same, layout == KvLayout::kv_separate);
  });
}

// v == nullptr writes K only: the V pages (here a separate region, the plain layout's V half)
// keep every byte, and K is stored exactly as with V. MLA's latent cache (cache.v == cache.k) gets
// its rows written once.
TEST(WriteKv, NullVWritesKOnlyAndLeavesVMemoryUntouched) {
  Rng rng(13);
  for_each_cache_shape([&](KvLayout layout, DType dt, int32_t bs) {
    const int32_t nb = 8, kvh = 2, hd = 9, tokens = 7, stride = kvh * hd + 2;
    TestCache both = make_test_cache(layout, dt, nb, bs, kvh, hd);
    TestCache k_only = make_test_cache(layout, dt, nb, bs, kvh, hd);
    if (dt == DType::fp8_e4m3)
      for (TestCache* c : {&both, &k_only}) c->desc.k_scale = 0.05f, c->desc.v_scale = 0.5f;
    std::vector<int64_t> slots(tokens);  // distinct: 5 is coprime with 8 * bs
    for (int32_t t = 0; t < tokens; ++t) slots[t] = t == 2 ? -1 : (t * 5 + 1) % (nb * bs);
    const std::vector<float> k = random_floats(rng, tokens * stride, -3, 3);
    const std::vector<float> v = random_floats(rng, tokens * stride, -3, 3);
    host::write_kv(
        WriteKvArgs{both.desc, k.data(), v.data(), stride, stride, slots.data(), tokens});
    host::write_kv(
        WriteKvArgs{k_only.desc, k.data(), nullptr, stride, 0, slots.data(), tokens});
    // Every K byte equals the K+V write; every V byte is still the poison of the fresh cache.
    const TestCache fresh = make_test_cache(layout, dt, nb, bs, kvh, hd);
    const int64_t page = static_cast<int64_t>(bs) * kvh * hd;
    const int esz = dtype_size(dt);
    const char* got = reinterpret_cast<const char*>(k_only.storage.data());
    const char* kv = reinterpret_cast<const char*>(both.storage.data());
    const char* old = reinterpret_cast<const char*>(fresh.storage.data());
    for (int32_t b = 0; b < nb; ++b) {
      const int64_t ko = elem_index(layout, nb, page, kvh, hd, false, b, 0, 0, 0) * esz;
      const int64_t vo = elem_index(layout, nb, page, kvh, hd, true, b, 0, 0, 0) * esz;
      ASSERT_EQ(memcmp(got + ko, kv + ko, page * esz), 0) << "K of block " << b;
      ASSERT_EQ(memcmp(got + vo, old + vo, page * esz), 0) << "V of block " << b;
    }
  });
}

TEST(WriteKv, MlaLatentCacheWithVAliasingK) {
  Rng rng(14);
  const int32_t nb = 4, bs = 3, hd = 24, tokens = 5;
  TestCache c = make_test_cache(KvLayout::kv_separate, DType::fp8_e4m3, nb, bs, 1, hd);
  c.desc.v = c.desc.k;
  c.desc.k_scale = c.desc.v_scale = 0.05f;
  const std::vector<float> lat = random_floats(rng, tokens * hd, -4, 4);
  const std::vector<int64_t> slots = {4, 0, -1, 11, 7};
  host::write_kv(WriteKvArgs{c.desc, lat.data(), nullptr, hd, 0, slots.data(), tokens});
  for (int32_t t = 0; t < tokens; ++t) {
    if (slots[t] < 0) continue;
    for (int32_t f = 0; f < hd; ++f) {
      const float want = round_through_scaled(lat[t * hd + f], DType::fp8_e4m3, 0.05f);
      ASSERT_EQ(f32_bits(load_k(c.desc, slots[t] / bs, slots[t] % bs, 0, f)), f32_bits(want));
      ASSERT_EQ(f32_bits(load_v(c.desc, slots[t] / bs, slots[t] % bs, 0, f)), f32_bits(want));
    }
  }
  // The plain layout's V half (past the K pages) was never written: still the fp8 NaN poison.
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(c.storage.data());
  for (int64_t i = int64_t(nb) * bs * hd; i < 2 * int64_t(nb) * bs * hd; ++i)
    ASSERT_EQ(bytes[i], 0x7f) << i;
}

// v_out == nullptr gathers K only, identical to the K of a K+V gather, on both layouts and also
// through the seed-004 addressing.
TEST(GatherKv, NullVOutGathersKOnly) {
  Rng rng(15);
  for (KvLayout layout : kLayouts)
    for (bool bug : {false, true})
      for (int32_t bs : {1, 3, 7, 16}) {
        SCOPED_TRACE(testing::Message() << "layout " << int(layout) << " bs " << bs << " " << bug);
        const int32_t kvh = 1, hd = 10;
        const std::vector<int32_t> lens = {4, 0, 1, 2 * bs + 1};
        const int32_t stride = 6, nb = blocks_needed(lens, bs) + 2;
        TestCache c = make_test_cache(layout, DType::bf16, nb, bs, kvh, hd);
        const std::vector<int32_t> table = shuffled_tables(rng, nb, bs, lens, stride);
        std::vector<int32_t> starts = {0};
        for (int32_t l : lens) starts.push_back(starts.back() + l);
        const int32_t total = starts.back();
        const std::vector<float> k = random_floats(rng, total * hd),
                                 v = random_floats(rng, total * hd);
        for (size_t s = 0; s < lens.size(); ++s)
          store_sequence(c, &table[s * stride], lens[s], &k[starts[s] * hd], &v[starts[s] * hd]);
        std::vector<float> k_both(total * hd + 3), v_both(total * hd + 3), k_only(total * hd + 3);
        poison(k_both);
        poison(v_both);
        poison(k_only);
        GatherKvArgs g{bug ? with_shape_strides(c.desc) : c.desc,
                       table.data(),  stride,        lens.data(), starts.data(), k_both.data(),
                       v_both.data(), int32_t(lens.size())};
        host::gather_kv(g);
        g.k_out = k_only.data();
        g.v_out = nullptr;
        host::gather_kv(g);
        EXPECT_EQ(memcmp(k_only.data(), k_both.data(), k_only.size() * 4), 0);
        if (!bug) {
          for (int32_t i = 0; i < total * hd; ++i)
            ASSERT_EQ(k_only[i], round_through(k[i], DType::bf16)) << i;
        }
      }
}

TEST(FillBlocks, WritesTheDtypeCodesIntoListedBlocksOnly) {
  for (KvLayout layout : kLayouts)
    for (DType dt : kDtypes)
      for (FillPattern pat : {FillPattern::nan, FillPattern::inf, FillPattern::zero}) {
        SCOPED_TRACE(testing::Message()
                     << dtype_name(dt) << " layout " << int(layout) << " pattern " << int(pat));
        const int32_t nb = 6, bs = 3, kvh = 2, hd = 5;
        TestCache c = make_test_cache(layout, dt, nb, bs, kvh, hd);
        host::fill_pattern(c.storage.data(), c.storage.size() * 8, FillPattern::random_bits, dt, 7,
                           0);
        std::vector<uint64_t> want = c.storage;
        const std::vector<int32_t> ids = {4, 1};
        host::fill_blocks(FillBlocksArgs{c.desc, ids.data(), 2, pat, 0});
        const uint32_t code = pat == FillPattern::zero  ? 0u
                              : pat == FillPattern::nan ? host::nan_code(dt)
                                                        : host::inf_code(dt);
        const int64_t page = static_cast<int64_t>(bs) * kvh * hd;
        const int esz = dtype_size(dt);
        for (int32_t b : ids)
          for (bool is_v : {false, true})
            for (int64_t i = 0; i < page; ++i) {
              const int64_t e = elem_index(layout, nb, page, kvh, hd, is_v, b, 0, 0, 0) + i;
              memcpy(reinterpret_cast<char*>(want.data()) + e * esz, &code, esz);
            }
        EXPECT_TRUE(want == c.storage);
      }
  // The codes themselves, as the contract lists them.
  EXPECT_EQ(host::nan_code(DType::f32), 0x7fc00000u);
  EXPECT_EQ(host::nan_code(DType::f16), 0x7e00u);
  EXPECT_EQ(host::nan_code(DType::bf16), 0x7fc0u);
  EXPECT_EQ(host::nan_code(DType::fp8_e4m3), 0x7fu);
  EXPECT_EQ(host::inf_code(DType::f16), 0x7c00u);
  EXPECT_EQ(host::inf_code(DType::bf16), 0x7f80u);
  EXPECT_EQ(host::inf_code(DType::fp8_e4m3), 0x7fu);
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)) && std::isinf(f16_to_f32(0x7c00)));
}

TEST(FillBlocks, RandomBitsAreDeterministicPerSeedAndBlock) {
  const int32_t nb = 5, bs = 7, kvh = 1, hd = 16;
  auto run = [&](uint64_t seed, std::vector<int32_t> ids) {
    TestCache c = make_test_cache(KvLayout::kv_interleaved, DType::bf16, nb, bs, kvh, hd);
    host::fill_blocks(FillBlocksArgs{c.desc, ids.data(), static_cast<int32_t>(ids.size()),
                                     FillPattern::random_bits, seed});
    return c.storage;
  };
  const auto a = run(3, {2, 4}), b = run(3, {4, 2}), d = run(4, {2, 4}), one = run(3, {2});
  EXPECT_TRUE(a == b);   // order of the ids does not matter: bytes depend on (seed, block)
  EXPECT_FALSE(a == d);  // the seed does
  const int64_t page_bytes = int64_t(bs) * kvh * hd * 2;
  const char* pa = reinterpret_cast<const char*>(a.data());
  const char* po = reinterpret_cast<const char*>(one.data());
  EXPECT_EQ(memcmp(pa + 2 * 2 * page_bytes, po + 2 * 2 * page_bytes, 2 * page_bytes), 0);
  EXPECT_NE(memcmp(pa + 2 * 2 * page_bytes, pa + 4 * 2 * page_bytes, 2 * page_bytes), 0);
  EXPECT_NE(memcmp(pa + 2 * 2 * page_bytes, pa + (2 * 2 + 1) * page_bytes, page_bytes),
            0);  // K != V
  // Unlisted block 3 keeps its poison.
  const TestCache fresh = make_test_cache(KvLayout::kv_interleaved, DType::bf16, nb, bs, kvh, hd);
  EXPECT_EQ(memcmp(pa + 3 * 2 * page_bytes,
                   reinterpret_cast<const char*>(fresh.storage.data()) + 3 * 2 * page_bytes,
                   2 * page_bytes),
            0);
}

}  // namespace
}  // namespace kv::test
