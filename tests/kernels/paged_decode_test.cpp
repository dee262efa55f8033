// paged_decode_test.cpp — split-KV paged decode against a float64 softmax over the logical K/V of
// each row (never the cache): block sizes, batch sizes, GQA, layouts, dtypes and split plans;
// padded rows untouched; the whole-tile P·V behaviour on the unused tail of the last block.
#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kv::test {
namespace {

enum class SplitPlan { one, many, past_end };

struct DecodeSetup {
  KvLayout layout = KvLayout::kv_separate;
  DType dtype = DType::f32;
  int32_t block_size = 16;
  int32_t kv_heads = 2, ratio = 1, head_dim = 12;
  std::vector<int32_t> lens;
  SplitPlan plan = SplitPlan::many;
};

// Everything one decode call needs, built from a setup; the logical K/V stay here for the
// reference.
struct DecodeCase : DecodeBuffers {
  DecodeSetup s;
  TestCache cache;
  int32_t q_heads = 0;
  std::vector<std::vector<float>> k, v;  // per row: [len][kv_heads * head_dim]

  PagedDecodeArgs args() { return DecodeBuffers::args(cache.desc, s.lens, q_heads); }
};

DecodeCase make_case(const DecodeSetup& s, Rng& rng) {
  DecodeCase c;
  c.s = s;
  const int32_t bs = s.block_size, row = s.kv_heads * s.head_dim, rows = int32_t(s.lens.size());
  const int32_t maxlen = std::max(1, *std::max_element(s.lens.begin(), s.lens.end()));
  const int32_t max_blocks = (maxlen + bs - 1) / bs;
  c.table_stride = max_blocks + 2;
  const int32_t nb = blocks_needed(s.lens, bs) + 4;
  c.cache = make_test_cache(s.layout, s.dtype, nb, bs, s.kv_heads, s.head_dim);
  if (s.dtype == DType::fp8_e4m3) c.cache.desc.k_scale = 0.03f, c.cache.desc.v_scale = 0.02f;
  c.table = shuffled_tables(rng, nb, bs, s.lens, c.table_stride);
  for (int32_t r = 0; r < rows; ++r) {
    c.k.push_back(random_floats(rng, size_t(s.lens[r]) * row));
    c.v.push_back(random_floats(rng, size_t(s.lens[r]) * row));
    store_sequence(c.cache, &c.table[r * c.table_stride], s.lens[r], c.k[r].data(), c.v[r].data());
  }
  c.q_heads = s.kv_heads * s.ratio;
  c.q_stride = c.q_heads * s.head_dim + 5;
  c.out_stride = c.q_heads * s.head_dim + 3;
  c.q = random_floats(rng, size_t(rows) * c.q_stride);
  c.scale = 2.0f / std::sqrt(float(s.head_dim));  // sharper than 1/sqrt(d): less uniform softmax
  int32_t chunk = bs;
  switch (s.plan) {
    case SplitPlan::one:
      chunk = max_blocks * bs, c.max_splits = 1;
      break;
    case SplitPlan::many:
      chunk = bs, c.max_splits = max_blocks;
      break;
    case SplitPlan::past_end:
      chunk = 2 * bs, c.max_splits = (maxlen + 2 * bs - 1) / (2 * bs) + 2;
      break;
  }
  c.meta = {chunk};
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t needed = (s.lens[r] + chunk - 1) / chunk;
    // Padded rows get a full split count too: seq_len 0 alone must keep them unwritten.
    c.meta.push_back(s.plan == SplitPlan::past_end || s.lens[r] == 0 ? c.max_splits : needed);
  }
  c.out.resize(size_t(rows) * c.out_stride);
  c.partial_out.resize(size_t(rows) * c.max_splits * c.q_heads * s.head_dim);
  c.partial_lse.resize(size_t(rows) * c.max_splits * c.q_heads);
  c.poison_outputs();
  return c;
}

// float64 softmax attention of query head h of row r over the row's logical K/V, rounded
// through the cache dtype as the cache stores them.
std::vector<double> reference(const DecodeCase& c, int32_t r, int32_t h) {
  const int32_t hd = c.s.head_dim, row = c.s.kv_heads * hd, kvh = h / c.s.ratio;
  const int32_t len = c.s.lens[r];
  const float* q = &c.q[size_t(r) * c.q_stride + size_t(h) * hd];
  const PagedKv& d = c.cache.desc;
  std::vector<double> score(len), out(hd, 0.0);
  double m = -INFINITY, sum = 0.0;
  for (int32_t t = 0; t < len; ++t) {
    double dot = 0.0;
    for (int32_t f = 0; f < hd; ++f)
      dot += double(q[f]) * cache_round(c.k[r][size_t(t) * row + kvh * hd + f], d.dtype, d.k_scale);
    score[t] = dot * c.scale;
    m = std::max(m, score[t]);
  }
  for (int32_t t = 0; t < len; ++t) {
    const double p = std::exp(score[t] - m);
    sum += p;
    for (int32_t f = 0; f < hd; ++f)
      out[f] += p * cache_round(c.v[r][size_t(t) * row + kvh * hd + f], d.dtype, d.v_scale);
  }
  for (double& o : out) o /= sum;
  return out;
}

// Float accumulation over at most a few hundred keys with identically rounded inputs: the
// relative L2 error stays near 1e-6; 2e-5 leaves margin without hiding a wrong key or weight.
constexpr double kDecodeTol = 2e-5;

void check_case(DecodeCase& c) {
  const int32_t hd = c.s.head_dim;
  for (size_t r = 0; r < c.s.lens.size(); ++r) {
    const float* out = &c.out[r * c.out_stride];
    for (int32_t i = c.q_heads * hd; i < c.out_stride; ++i) ASSERT_TRUE(is_poison(out[i]));
    if (c.s.lens[r] == 0) {
      for (int32_t i = 0; i < c.out_stride; ++i)
        ASSERT_TRUE(is_poison(out[i])) << "padded row " << r;
      continue;
    }
    for (int32_t h = 0; h < c.q_heads; ++h) {
      const std::vector<double> ref = reference(c, int32_t(r), h);
      const double err = rel_l2(out + h * hd, ref.data(), hd);
      ASSERT_FALSE(!(err <= kDecodeTol))
          << "row " << r << " head " << h << " len " << c.s.lens[r] << " err " << err;
    }
  }
}

TEST(PagedDecode, MatchesFloat64ReferenceAcrossShapesLayoutsDtypesAndSplitPlans) {
  Rng rng(21);
  int cases = 0;
  for (KvLayout layout : {KvLayout::kv_separate, KvLayout::kv_interleaved})
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3})
      for (int32_t bs : {1, 3, 7, 16})
        for (int32_t rows : {1, 5, 23})
          for (int32_t ratio : {1, 4})
            for (SplitPlan plan : {SplitPlan::one, SplitPlan::many, SplitPlan::past_end}) {
              SCOPED_TRACE(testing::Message()
                           << dtype_name(dt) << " layout " << int(layout) << " bs " << bs
                           << " rows " << rows << " gqa " << ratio << " plan " << int(plan));
              DecodeSetup s{layout, dt,  bs, 2, ratio, 12, row_lengths(rng, rows, bs, 6 * bs + 3),
                            plan};
              DecodeCase c = make_case(s, rng);
              host::paged_decode(c.args());
              check_case(c);
              ++cases;
            }
  EXPECT_EQ(cases, 2 * 4 * 4 * 3 * 2 * 3);
}

TEST(PagedDecode, AllRowsPaddedWritesNothing) {
  Rng rng(22);
  DecodeCase c = make_case(
      DecodeSetup{KvLayout::kv_separate, DType::bf16, 3, 2, 4, 12, {0, 0, 0}, SplitPlan::many},
      rng);
  host::paged_decode(c.args());
  for (float x : c.out) ASSERT_TRUE(is_poison(x));
  for (float x : c.partial_out) ASSERT_TRUE(is_poison(x));
}

// The FlashMLA-like whole-tile product: a NaN left in V past the sequence end, inside the last
// block, reaches the output of the heads reading that kv head; a zeroed tail gives the exact
// answer. A NaN in K there is masked (its score is -inf) and changes nothing.
TEST(PagedDecode, StaleNanInTheLastBlocksTailReachesTheOutput) {
  for (SplitPlan plan : {SplitPlan::one, SplitPlan::many, SplitPlan::past_end}) {
    SCOPED_TRACE(int(plan));
    Rng rng(23);
    const int32_t bs = 16, len = 2 * bs + 3;
    DecodeCase c = make_case(
        DecodeSetup{KvLayout::kv_interleaved, DType::bf16, bs, 2, 2, 12, {len}, plan}, rng);
    const int32_t last = c.table[(len - 1) / bs];
    PagedKv& d = c.cache.desc;
    store_from_f32(d.v, v_offset(d, last, bs - 3, 0, 5), d.dtype, NAN);
    host::paged_decode(c.args());
    EXPECT_TRUE(std::isnan(c.out[5]) &&
                std::isnan(c.out[12 + 5]));           // feature 5, heads 0 and 1 (kv head 0)
    EXPECT_TRUE(all_finite(&c.out[2 * 12], 2 * 12));  // heads 2 and 3: kv head 1

    store_from_f32(d.v, v_offset(d, last, bs - 3, 0, 5), d.dtype, 0.0f);
    store_from_f32(d.k, k_offset(d, last, bs - 1, 0, 2), d.dtype, NAN);
    store_from_f32(d.k, k_offset(d, last, bs - 2, 1, 0), d.dtype, INFINITY);
    poison(c.out);
    host::paged_decode(c.args());
    check_case(c);
  }
}

// A sequence that fills its blocks exactly must not read the table entry after them (block 0
// here, poisoned with NaN).
TEST(PagedDecode, NeverReadsTableEntriesPastTheSequence) {
  Rng rng(24);
  for (int32_t bs : {1, 3, 16}) {
    DecodeCase c = make_case(
        DecodeSetup{
            KvLayout::kv_separate, DType::f32, bs, 1, 1, 12, {2 * bs, bs, 1}, SplitPlan::past_end},
        rng);
    ASSERT_EQ(c.table[2], 0);  // the entry after row 0's two blocks: poisoned block 0
    host::paged_decode(c.args());
    check_case(c);
  }
}

TEST(PagedDecode, MoreSplitsThanTheWorkspaceIsRejected) {
  Rng rng(25);
  DecodeCase c = make_case(
      DecodeSetup{KvLayout::kv_separate, DType::f32, 3, 1, 1, 12, {10}, SplitPlan::many}, rng);
  c.meta[1] = c.max_splits + 1;
  EXPECT_THROW(host::paged_decode(c.args()), std::invalid_argument);
}

}  // namespace
}  // namespace kv::test
