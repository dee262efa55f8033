// mla_decode_test.cpp — paged_decode in the MLA shape (one latent head, head_dim = R + P,
// cache.v == cache.k, v_dim = R) against a float64 reference over the logical latent rows: ranks
// with and without rope features, 1/4/7 query heads, block sizes 1/3/7/16, odd batch sizes with
// padded and single-token rows, every cache dtype (fp8 with two scales). Then the whole-tile
// property on the unused tail of the last block, feature by feature.
#include <gtest/gtest.h>

#include "mla_decode_support.h"

namespace kv::test {
namespace {

struct MlaSetup {
  int32_t rank = 19, rope = 5, heads = 4, block_size = 7;
  DType dtype = DType::bf16;
  float k_scale = 1.0f;
  std::vector<int32_t> lens;
  int32_t chunk_blocks = 0;  // 0: one split per row
};

// The latent cache, the logical rows per decode row and the call over them.
struct MlaCase {
  TestCache storage;
  std::vector<std::vector<float>> lat;  // per row: [len][R + P]
  MlaDecode d;
};

// Every row's blocks are zeroed (the engine's zero-on-alloc) and its rows written K-only; block 0
// and the spare blocks keep the NaN poison of make_test_cache.
MlaCase make_case(const MlaSetup& s, Rng& rng) {
  MlaCase c;
  const int32_t hd = s.rank + s.rope, bs = s.block_size;
  const int32_t maxlen = std::max(1, *std::max_element(s.lens.begin(), s.lens.end()));
  const int32_t stride = (maxlen + bs - 1) / bs + 2;
  const int32_t nb = blocks_needed(s.lens, bs) + 3;
  c.storage = make_test_cache(KvLayout::kv_separate, s.dtype, nb, bs, 1, hd);
  PagedKv& cache = c.storage.desc;
  cache.v = cache.k;
  cache.k_scale = cache.v_scale = s.k_scale;
  std::vector<int32_t> table = shuffled_tables(rng, nb, bs, s.lens, stride);
  for (size_t r = 0; r < s.lens.size(); ++r) {
    const int32_t len = s.lens[r];
    c.lat.push_back(random_floats(rng, static_cast<size_t>(len) * hd, -2.0f, 2.0f));
    host::fill_blocks(
        FillBlocksArgs{cache, &table[r * stride], (len + bs - 1) / bs, FillPattern::zero, 0});
    write_latent(cache, &table[r * stride], len, c.lat[r].data());
  }
  c.d = make_mla_decode(cache, s.rank, s.heads, s.lens, std::move(table), stride, s.chunk_blocks,
                        rng);
  return c;
}

void check_case(const MlaCase& c) {
  const MlaDecode& d = c.d;
  for (size_t r = 0; r < d.lens.size(); ++r) {
    const float* out = &d.out[r * d.out_stride];
    const int32_t written = d.lens[r] == 0 ? 0 : d.heads * d.rank;  // padded rows: nothing
    for (int32_t i = written; i < d.out_stride; ++i)
      ASSERT_TRUE(is_poison(out[i])) << "row " << r << " element " << i << " was written";
    if (d.lens[r] == 0) continue;
    for (int32_t h = 0; h < d.heads; ++h) {
      const double err = mla_error(d, int32_t(r), h, c.lat[r].data());
      ASSERT_FALSE(!(err <= kMlaDecodeTol))
          << "row " << r << " head " << h << " len " << d.lens[r] << " err " << err;
    }
  }
}

struct CacheType {
  DType dtype;
  float scale;
};
const CacheType kCacheTypes[] = {{DType::f32, 1.0f},
                                 {DType::f16, 1.0f},
                                 {DType::bf16, 1.0f},
                                 {DType::fp8_e4m3, 1.0f},
                                 {DType::fp8_e4m3, 0.05f}};

TEST(MlaDecode, MatchesFloat64AcrossRanksHeadsBlockSizesAndDtypes) {
  Rng rng(51);
  const int32_t shapes[][2] = {{19, 5}, {32, 8}, {64, 0}};
  int cases = 0;
  for (const auto& rp : shapes)
    for (int32_t heads : {1, 4, 7})
      for (int32_t bs : {1, 3, 7, 16})
        for (const CacheType& ct : kCacheTypes)
          for (int32_t rows : {1, 7})
            for (int32_t chunk_blocks : {0, 1}) {
              SCOPED_TRACE(testing::Message()
                           << "R " << rp[0] << " P " << rp[1] << " heads " << heads << " bs " << bs
                           << " " << dtype_name(ct.dtype) << " scale " << ct.scale << " rows "
                           << rows << " chunk " << chunk_blocks);
              MlaSetup s{rp[0],    rp[1],    heads,
                         bs,       ct.dtype, ct.scale,
                         row_lengths(rng, rows, bs, 6 * bs + 3), chunk_blocks};
              MlaCase c = make_case(s, rng);
              host::paged_decode(c.d.args());
              check_case(c);
              ++cases;
            }
  EXPECT_EQ(cases, 3 * 3 * 4 * 5 * 2 * 2);
}

// Row 0 ends inside its last block (tail entries len % bs .. bs-1 unused); row 1 is a second,
// clean sequence that must stay correct whatever happens to row 0.
MlaCase tail_case(int32_t bs, DType dtype, int32_t chunk_blocks, Rng& rng) {
  const int32_t len = 2 * bs + 2;
  return make_case(MlaSetup{19,
                            5,
                            4,
                            bs,
                            dtype,
                            dtype == DType::fp8_e4m3 ? 0.05f : 1.0f,
                            {len, bs + 1},
                            chunk_blocks},
                   rng);
}

int32_t last_block(const MlaCase& c, int32_t row) {
  return c.d.table[row * c.d.table_stride + (c.d.lens[row] - 1) / c.d.cache.block_size];
}

// FlashMLA multiplies P·V over the whole last tile: p = 0 for a tail entry, but 0 × NaN = NaN, so
// a NaN in one of the first v_dim features of a tail entry reaches that feature of every head.
TEST(MlaDecode, StaleNanInTheVFeaturesOfTheTailReachesTheOutput) {
  Rng rng(52);
  for (int32_t bs : {3, 7, 16})
    for (DType dt : {DType::bf16, DType::fp8_e4m3})
      for (int32_t chunk_blocks : {0, 1}) {
        SCOPED_TRACE(testing::Message()
                     << "bs " << bs << " " << dtype_name(dt) << " chunk " << chunk_blocks);
        MlaCase c = tail_case(bs, dt, chunk_blocks, rng);
        const int32_t feat = 7, entry = bs - 1;  // the last tail entry
        store_from_f32(c.d.cache.k, k_offset(c.d.cache, last_block(c, 0), entry, 0, feat), dt, NAN);
        host::paged_decode(c.d.args());
        for (int32_t h = 0; h < c.d.heads; ++h) {
          EXPECT_TRUE(std::isnan(c.d.out[h * c.d.rank + feat])) << "head " << h;
          EXPECT_TRUE(std::isfinite(c.d.out[h * c.d.rank + feat + 1])) << "head " << h;
        }
        for (int32_t h = 0; h < c.d.heads; ++h)
          ASSERT_FALSE(!(mla_error(c.d, 1, h, c.lat[1].data()) <= kMlaDecodeTol)) << h;
      }
}

// The rope features (index >= v_dim) of a tail entry are read by neither product: the entry's
// score is masked before K is used, and V stops at v_dim. NaN there changes nothing.
TEST(MlaDecode, StaleNanInTheRopeFeaturesOfTheTailIsNeverRead) {
  Rng rng(53);
  for (int32_t bs : {3, 7, 16})
    for (DType dt : {DType::bf16, DType::fp8_e4m3, DType::f32}) {
      SCOPED_TRACE(testing::Message() << "bs " << bs << " " << dtype_name(dt));
      MlaCase c = tail_case(bs, dt, 1, rng);
      const PagedKv& k = c.d.cache;
      for (int32_t e = c.d.lens[0] % bs; e < bs; ++e)
        for (int32_t f = c.d.rank; f < k.head_dim; ++f)
          store_from_f32(k.k, k_offset(k, last_block(c, 0), e, 0, f), dt, NAN);
      host::paged_decode(c.d.args());
      check_case(c);
    }
}

// The other side of the same coin: the rope features of a valid entry are part of its score.
TEST(MlaDecode, NanInTheRopeFeaturesOfAValidEntryReachesTheOutput) {
  Rng rng(54);
  MlaCase c = tail_case(7, DType::bf16, 0, rng);
  store_from_f32(c.d.cache.k, k_offset(c.d.cache, last_block(c, 0), 0, 0, c.d.rank + 2),
                 DType::bf16, NAN);
  host::paged_decode(c.d.args());
  EXPECT_TRUE(std::isnan(c.d.out[0]));
  EXPECT_TRUE(all_finite(&c.d.out[c.d.out_stride], c.d.heads * c.d.rank));  // row 1
}

// The seed-000 mechanism in the MLA shape: a last block full of stale NaN (not zeroed on alloc)
// gives NaN once the row is written over part of it; zeroing the block first gives the exact
// answer.
TEST(MlaDecode, ZeroingTheLastBlockBeforeWritingHidesItsStaleTail) {
  Rng rng(55);
  for (int32_t bs : {3, 16})
    for (DType dt : {DType::bf16, DType::fp8_e4m3}) {
      SCOPED_TRACE(testing::Message() << "bs " << bs << " " << dtype_name(dt));
      MlaCase c = tail_case(bs, dt, 0, rng);
      const int32_t b = last_block(c, 0);
      host::fill_blocks(FillBlocksArgs{c.d.cache, &b, 1, FillPattern::nan, 0});
      write_latent(c.d.cache, &c.d.table[0], c.d.lens[0], c.lat[0].data());
      host::paged_decode(c.d.args());
      for (int32_t h = 0; h < c.d.heads; ++h) EXPECT_TRUE(std::isnan(c.d.out[h * c.d.rank]));

      host::fill_blocks(FillBlocksArgs{c.d.cache, &b, 1, FillPattern::zero, 0});
      write_latent(c.d.cache, &c.d.table[0], c.d.lens[0], c.lat[0].data());
      poison(c.d.out);
      host::paged_decode(c.d.args());
      check_case(c);
    }
}

TEST(MlaDecode, VDimOutsideTheHeadIsRejected) {
  Rng rng(56);
  MlaCase c = tail_case(3, DType::f32, 0, rng);
  PagedDecodeArgs a = c.d.args();
  a.v_dim = c.d.cache.head_dim + 1;
  EXPECT_THROW(host::paged_decode(a), std::invalid_argument);
  a.v_dim = -2;
  EXPECT_THROW(host::paged_decode(a), std::invalid_argument);
  for (float x : c.d.out) ASSERT_TRUE(is_poison(x));
}

}  // namespace
}  // namespace kv::test
