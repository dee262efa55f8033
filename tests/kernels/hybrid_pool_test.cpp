// hybrid_pool_test.cpp — one physical block pool seen as linear-attention states and as KV pages
// (the seed-000 mechanism), and the layouts a hybrid pool uses: interleaved [K][V] pages and pages
// padded to the state's size, addressed through explicit block strides (the seed-004 mechanism).
#include <gtest/gtest.h>

#include "mla_decode_support.h"

namespace kv::test {
namespace {

// ---- one pool, three views
// -----------------------------------------------------------------------
//
// A page is sized for the largest tenant, the f32 state of H x D x D (16 KiB); each KV view puts
// its K (and V) page at the start of a block's page and steps by the whole page, which is larger
// than its own K + V: block stride = page elements, set explicitly over make_paged_kv's strides.
constexpr int32_t kBlocks = 6, kHeads = 4, kDim = 32;
constexpr int64_t kPageBytes = int64_t(kHeads) * kDim * kDim * 4;
constexpr int32_t kBlockSize = 16;
constexpr int32_t kKvHeadDim = 192;         // bf16 [K][V]: 2 x 6 KiB of the 16 KiB page
constexpr int32_t kRank = 512, kRope = 64;  // fp8 MLA latent: 9 KiB of the page
constexpr float kLatentScale = 0.05f;

struct Pool {
  std::vector<uint64_t> bytes = std::vector<uint64_t>(kBlocks * kPageBytes / 8, 0);
  void* base() { return bytes.data(); }
  const unsigned char* at(int64_t off) const {
    return reinterpret_cast<const unsigned char*>(bytes.data()) + off;
  }
};

PagedKv bf16_kv_view(Pool& p) {
  PagedKv c = make_paged_kv(p.base(), KvLayout::kv_interleaved, DType::bf16, kBlocks, kBlockSize, 1,
                            kKvHeadDim);  // v = k + one K page
  c.k_stride_block = c.v_stride_block = kPageBytes / 2;
  return c;
}

PagedKv fp8_mla_view(Pool& p) {
  PagedKv c = make_paged_kv(p.base(), KvLayout::kv_separate, DType::fp8_e4m3, kBlocks,
                            kBlockSize, 1, kRank + kRope);
  c.k_stride_block = c.v_stride_block = kPageBytes;
  c.v = c.k;  // V is the latent K
  c.k_scale = c.v_scale = kLatentScale;
  return c;
}

// Run one 20-row sequence of gated linear attention with seeded inputs of the model's magnitude
// (q, k, v in [-1, 1], gate logits in [-1, 3]) whose state lives in block `block` of the pool.
void leave_a_state(Pool& p, int32_t block, Rng& rng) {
  const int32_t rows = 20, width = kHeads * kDim;
  LinearAttnBuffers b;
  b.q = random_floats(rng, size_t(rows) * width);
  b.k = random_floats(rng, size_t(rows) * width);
  b.v = random_floats(rng, size_t(rows) * width);
  b.gate = random_floats(rng, size_t(rows) * kHeads, -1.0f, 3.0f);
  b.out.resize(size_t(rows) * width);
  b.starts = {0, rows}, b.blocks = {block}, b.init = {0};
  b.qkv_stride = b.out_stride = width, b.gate_stride = kHeads;
  host::linear_attention(b.args(static_cast<float*>(p.base()), kPageBytes / 4, kHeads, kDim,
                                1.0f / std::sqrt(float(kDim))));
  ASSERT_TRUE(all_finite(b.out.data(), b.out.size()));
}

int count_non_finite_k(const PagedKv& c, int32_t block) {
  int n = 0;
  for (int32_t e = 0; e < c.block_size; ++e)
    for (int32_t f = 0; f < c.head_dim; ++f) n += std::isfinite(load_k(c, block, e, 0, f)) ? 0 : 1;
  return n;
}

int count_non_finite_v(const PagedKv& c, int32_t block) {
  int n = 0;
  for (int32_t e = 0; e < c.block_size; ++e)
    for (int32_t f = 0; f < c.head_dim; ++f) n += std::isfinite(load_v(c, block, e, 0, f)) ? 0 : 1;
  return n;
}

// A finite f32 state read as KV holds NaN/Inf: the low 16 bits of an f32 are mantissa bits, which
// read as a bf16 put arbitrary bits in its exponent field (all ones, NaN or Inf, about 1 in 256);
// read as fp8 e4m3fn, any mantissa byte may be 0x7f or 0xff, its NaN codes (2 in 256). Thousands
// of elements per page make a positive count certain in practice, and the inputs are seeded.
TEST(HybridPool, AStateBlockReadAsKvHoldsNanAndInf) {
  Rng rng(81);
  Pool p;
  const int32_t b = 3;
  leave_a_state(p, b, rng);
  const float* state = reinterpret_cast<const float*>(p.at(b * kPageBytes));
  ASSERT_TRUE(all_finite(state, kPageBytes / 4));  // as a state, every value is fine
  const PagedKv kv = bf16_kv_view(p), mla = fp8_mla_view(p);
  const int bf16_bad = count_non_finite_k(kv, b) + count_non_finite_v(kv, b);
  const int fp8_bad = count_non_finite_k(mla, b);
  EXPECT_GT(bf16_bad, 0);
  EXPECT_GT(fp8_bad, 0);
  // The neighbours were never a state: zero bytes read as zeros.
  EXPECT_EQ(count_non_finite_k(kv, b - 1) + count_non_finite_k(mla, b + 1), 0);
}

// The seed-000 bug end to end: an MLA decode whose last block was a state block, rows written
// over its first entries only, reads the stale tail through the whole-tile P·V and gives NaN.
// Zeroing the block through the KV view when it is allocated (before the rows are written) fixes
// it exactly.
TEST(HybridPool, MlaDecodeOverARecycledStateBlockNeedsZeroing) {
  Rng rng(82);
  Pool p;
  const int32_t a = 1, b = 4, len = kBlockSize + 3, hd = kRank + kRope;
  leave_a_state(p, b, rng);
  const PagedKv mla = fp8_mla_view(p);
  const std::vector<float> lat = random_floats(rng, size_t(len) * hd, -2.0f, 2.0f);
  const std::vector<int32_t> table = {a, b};
  write_latent(mla, table.data(), len, lat.data());
  MlaDecode d = make_mla_decode(mla, kRank, 4, {len}, table, 2, 0, rng);
  host::paged_decode(d.args());
  int nan = 0;
  for (int32_t i = 0; i < d.heads * d.rank; ++i) nan += std::isnan(d.out[i]) ? 1 : 0;
  EXPECT_GT(nan, 0);

  host::fill_blocks(FillBlocksArgs{mla, &b, 1, FillPattern::zero, 0});
  write_latent(mla, table.data(), len, lat.data());
  poison(d.out);
  host::paged_decode(d.args());
  for (int32_t h = 0; h < d.heads; ++h) {
    const double err = mla_error(d, 0, h, lat.data());
    ASSERT_FALSE(!(err <= kMlaDecodeTol)) << "head " << h << " err " << err;
  }
}

// fill_blocks through a view zeroes that view's pages of the block (K, and V where it is another
// page) and not one byte more: not the neighbours, not the rest of the padded page, which no KV
// reader of that view addresses.
TEST(HybridPool, FillBlocksThroughAViewZeroesOnlyThatBlocksPages) {
  Rng rng(83);
  const int32_t b = 2;
  for (bool mla : {false, true}) {
    SCOPED_TRACE(mla ? "fp8 mla view" : "bf16 interleaved view");
    Pool p;
    for (int32_t blk = 0; blk < kBlocks; ++blk) leave_a_state(p, blk, rng);
    const Pool before = p;
    const PagedKv view = mla ? fp8_mla_view(p) : bf16_kv_view(p);
    host::fill_blocks(FillBlocksArgs{view, &b, 1, FillPattern::zero, 0});
    const int64_t zeroed = mla ? int64_t(kBlockSize) * (kRank + kRope)      // one fp8 K page
                               : int64_t(kBlockSize) * kKvHeadDim * 2 * 2;  // bf16 K + V pages
    for (int64_t i = 0; i < kBlocks * kPageBytes; ++i) {
      const bool in_view = i >= b * kPageBytes && i < b * kPageBytes + zeroed;
      ASSERT_EQ(*p.at(i), in_view ? 0 : *before.at(i)) << "byte " << i;
    }
    EXPECT_EQ(count_non_finite_k(view, b), 0);
  }
}

// ---- the same data in three layouts
// ---------------------------------------------------------------

// A cache in the hybrid layout: interleaved [K][V] pages, each block `extra` elements longer than
// K + V (an odd padding on purpose), every byte a NaN code until written.
TestCache make_padded_cache(DType dt, int32_t nb, int32_t bs, int32_t kvh, int32_t hd,
                            int64_t extra) {
  TestCache c;
  const int64_t page = int64_t(bs) * kvh * hd, stride = 2 * page + extra;
  const size_t bytes = size_t(nb * stride) * dtype_size(dt);
  c.storage.resize((bytes + 7) / 8);
  host::fill_pattern(c.storage.data(), bytes, FillPattern::nan, dt, 0, 0);
  c.desc = make_paged_kv(c.storage.data(), KvLayout::kv_interleaved, dt, nb, bs, kvh, hd);
  c.desc.k_stride_block = c.desc.v_stride_block = stride;
  return c;
}

struct LayoutResult {
  std::vector<float> out, k, v, k_bug, v_bug;
};

// Decode of every row and gather of every sequence (correct and seed-004 addressing) over `c`.
LayoutResult run_on(TestCache& c, const std::vector<int32_t>& lens,
                    const std::vector<int32_t>& table, int32_t stride,
                    const std::vector<std::vector<float>>& k,
                    const std::vector<std::vector<float>>& v, const std::vector<float>& q,
                    int32_t q_heads) {
  const int32_t rows = int32_t(lens.size()), bs = c.desc.block_size;
  const int32_t row = c.desc.num_kv_heads * c.desc.head_dim, hd = c.desc.head_dim;
  for (int32_t r = 0; r < rows; ++r)
    store_sequence(c, &table[r * stride], lens[r], k[r].data(), v[r].data());
  LayoutResult res;
  std::vector<int32_t> meta = {bs};
  for (int32_t len : lens) meta.push_back((len + bs - 1) / bs);
  std::vector<float> po(size_t(rows) * stride * q_heads * hd), pl(size_t(rows) * stride * q_heads);
  res.out.resize(size_t(rows) * q_heads * hd);
  poison(res.out);
  PagedDecodeArgs a;
  a.cache = c.desc;
  a.q = q.data(), a.q_row_stride = q_heads * hd;
  a.out = res.out.data(), a.out_row_stride = q_heads * hd;
  a.block_table = table.data(), a.block_table_stride = stride;
  a.seq_lens = lens.data(), a.split_meta = meta.data();
  a.partial_out = po.data(), a.partial_lse = pl.data(), a.max_splits = stride;
  a.num_rows = rows, a.num_q_heads = q_heads, a.scale = 1.0f / std::sqrt(float(hd));
  host::paged_decode(a);

  std::vector<int32_t> starts = {0};
  for (int32_t len : lens) starts.push_back(starts.back() + len);
  for (auto* o : {&res.k, &res.v, &res.k_bug, &res.v_bug}) {
    o->resize(size_t(starts.back()) * row);
    poison(*o);
  }
  GatherKvArgs g{c.desc,       table.data(), stride, lens.data(), starts.data(),
                 res.k.data(), res.v.data(), rows};
  host::gather_kv(g);
  g.k_out = res.k_bug.data(), g.v_out = res.v_bug.data(), g.cache = with_shape_strides(c.desc);
  host::gather_kv(g);
  return res;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// The ops address the cache only through its strides, so the same data in any layout gives
// bitwise the same results; the seed-004 addressing is right only on the plain layout.
TEST(HybridPool, InterleavedAndPaddedLayoutsGiveThePlainLayoutsResults) {
  Rng rng(84);
  for (DType dt : {DType::bf16, DType::fp8_e4m3})
    for (int32_t bs : {1, 3, 7, 16})
      for (int32_t ratio : {1, 3}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " bs " << bs << " gqa " << ratio);
        const int32_t kvh = 2, hd = 12, q_heads = kvh * ratio;
        const std::vector<int32_t> lens = {0, 1, 2 * bs + 1, 3 * bs, 5};
        // The longest row needs max(3, ceil(5 / bs)) blocks; stride leaves spare entries.
        const int32_t stride = (5 + bs - 1) / bs + 3, nb = blocks_needed(lens, bs) + 2;
        const std::vector<int32_t> table = shuffled_tables(rng, nb, bs, lens, stride);
        std::vector<std::vector<float>> k, v;
        for (int32_t len : lens) {
          k.push_back(random_floats(rng, size_t(len) * kvh * hd));
          v.push_back(random_floats(rng, size_t(len) * kvh * hd));
        }
        const std::vector<float> q = random_floats(rng, lens.size() * q_heads * hd);
        TestCache plain = make_test_cache(KvLayout::kv_separate, dt, nb, bs, kvh, hd);
        TestCache inter = make_test_cache(KvLayout::kv_interleaved, dt, nb, bs, kvh, hd);
        TestCache padded = make_padded_cache(dt, nb, bs, kvh, hd, 5);
        for (TestCache* c : {&plain, &inter, &padded})
          if (dt == DType::fp8_e4m3) c->desc.k_scale = 0.25f, c->desc.v_scale = 0.125f;
        const LayoutResult rp = run_on(plain, lens, table, stride, k, v, q, q_heads);
        const LayoutResult ri = run_on(inter, lens, table, stride, k, v, q, q_heads);
        const LayoutResult rh = run_on(padded, lens, table, stride, k, v, q, q_heads);
        for (const LayoutResult* r : {&ri, &rh}) {
          EXPECT_TRUE(same_bits(r->out, rp.out));
          EXPECT_TRUE(same_bits(r->k, rp.k) && same_bits(r->v, rp.v));
        }
        EXPECT_TRUE(all_finite(&rp.out[q_heads * hd], (lens.size() - 1) * q_heads * hd));
        EXPECT_TRUE(is_poison(rp.out[0]));  // row 0 is padded (seq_len 0)
        EXPECT_TRUE(same_bits(rp.k_bug, rp.k) && same_bits(rp.v_bug, rp.v));
        EXPECT_FALSE(same_bits(ri.k_bug, ri.k) && same_bits(ri.v_bug, ri.v));
        EXPECT_FALSE(same_bits(rh.k_bug, rh.k) && same_bits(rh.v_bug, rh.v));
      }
}

}  // namespace
}  // namespace kv::test
