// cache_ops_gpu_test.cpp — CUDA vs host for the ops that move data in and out of the paged cache:
// write_kv, gather_kv, fill_blocks. These are conversion and addressing only, so the two devices
// must agree element for element (NaN payloads aside), including every byte neither one wrote.
// Shapes: block sizes 1, 3, 7, 16; f32, f16, bf16, fp8 (with scales); plain and interleaved
// layouts; GQA-style multi-head and MLA latent rows (head_dim 40 and 576, V read through K).
#include <numeric>
#include <sstream>

#include "gpu/gpu_test_support.h"

namespace kv::gpu_test {
namespace {

struct CacheShape {
  int32_t kv_heads, head_dim;
  bool mla;  // one latent row per token: cache.v == cache.k, K-only writes and gathers
};

constexpr CacheShape kShapes[] = {{1, 8, false}, {2, 24, false}, {1, 40, true}, {1, 576, true}};
constexpr DType kDtypes[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3};
constexpr KvLayout kLayouts[] = {KvLayout::kv_separate, KvLayout::kv_interleaved};
constexpr int32_t kBlockSizes[] = {1, 3, 7, 16};

std::string config(DType t, KvLayout l, int32_t bs, const CacheShape& s) {
  std::ostringstream o;
  o << test::dtype_name(t) << (l == KvLayout::kv_separate ? " kv_separate" : " kv_interleaved")
    << " bs " << bs << " kv_heads " << s.kv_heads << " head_dim " << s.head_dim
    << (s.mla ? " (mla)" : "");
  return o.str();
}

// fp8 gets scales that make values saturate and go subnormal; other dtypes a scale of 2 (the host
// divides by the scale for every dtype).
void set_scales(TwinCache& c, DType t) {
  c.k_scale = t == DType::fp8_e4m3 ? 0.05f : 2.0f;
  c.v_scale = t == DType::fp8_e4m3 ? 0.02f : 0.5f;
}

// Values in [-3, 3] plus the awkward ones: NaN, ±Inf, beyond fp8's range, subnormal.
std::vector<float> kv_values(Rng& rng, size_t n) {
  std::vector<float> v = test::random_floats(rng, n, -3.0f, 3.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, 1e6f, -3e4f, 1e-7f, -2e-9f, 0.0f, -0.0f};
  for (size_t i = 0; i < std::size(specials) && i * 7 < n; ++i) v[i * 7] = specials[i];
  return v;
}

class GpuCacheOps : public GpuTest {};

TEST_F(GpuCacheOps, WriteKvMatchesHostElementForElement) {
  SCOPED_TRACE(trace_seed());
  for (const CacheShape& shape : kShapes)
    for (DType t : kDtypes)
      for (KvLayout layout : kLayouts)
        for (int32_t bs : kBlockSizes) {
          SCOPED_TRACE(config(t, layout, bs, shape));
          const int32_t tokens = 13, row = shape.kv_heads * shape.head_dim;
          const int32_t nb = (tokens + bs - 1) / bs + 3;
          TwinCache c = cache(layout, t, nb, bs, shape.kv_heads, shape.head_dim,
                              FillPattern::random_bits);
          c.v_is_k = shape.mla;
          set_scales(c, t);
          // Distinct slots outside block 0, a few padded rows (-1).
          std::vector<int64_t> slots(static_cast<size_t>(nb - 1) * bs);
          std::iota(slots.begin(), slots.end(), int64_t{bs});
          std::shuffle(slots.begin(), slots.end(), rng_);
          slots.resize(tokens);
          for (int i = 0; i < 3; ++i) slots[test::random_int(rng_, 0, tokens - 1)] = -1;
          const int64_t stride = row + 5;  // rows wider than the heads: strides are honoured
          const Twin k = upload(kv_values(rng_, tokens * stride));
          const Twin v = upload(kv_values(rng_, tokens * stride));
          const Twin sl = upload(slots);
          on_both([&](Device& d, Side s) {
            WriteKvArgs a;
            a.cache = c.desc(s);
            a.k = k.p<float>(s);
            a.v = shape.mla ? nullptr : v.p<float>(s);
            a.k_row_stride = stride;
            a.v_row_stride = stride;
            a.slot_mapping = sl.p<int64_t>(s);
            a.num_tokens = tokens;
            d.write_kv(a);
          });
          EXPECT_TRUE(same_elements(get<unsigned char>(c.mem, Side::host, c.bytes()),
                                    get<unsigned char>(c.mem, Side::cuda, c.bytes()), t));
        }
}

TEST_F(GpuCacheOps, GatherKvMatchesHostWithAndWithoutTheContiguousBug) {
  SCOPED_TRACE(trace_seed());
  for (const CacheShape& shape : kShapes)
    for (DType t : kDtypes)
      for (KvLayout layout : kLayouts)
        for (int32_t bs : kBlockSizes)
          for (bool bug : {false, true}) {
            SCOPED_TRACE(config(t, layout, bs, shape) + (bug ? " shape strides" : ""));
            const std::vector<int32_t> lens = {0, 1, bs, 2 * bs + 1,
                                               test::random_int(rng_, 2, 29)};
            const int32_t stride = 40 / bs + 4;
            const int32_t nb = test::blocks_needed(lens, bs);
            // Random bits: the cache holds NaN/Inf codes everywhere, as stale memory does.
            TwinCache c = cache(layout, t, nb, bs, shape.kv_heads, shape.head_dim,
                                FillPattern::random_bits);
            c.v_is_k = shape.mla;
            set_scales(c, t);
            const std::vector<int32_t> table = test::shuffled_tables(rng_, nb, bs, lens, stride);
            std::vector<int32_t> starts(lens.size() + 1, 0);
            for (size_t i = 0; i < lens.size(); ++i) starts[i + 1] = starts[i] + lens[i];
            const size_t out_n = static_cast<size_t>(starts.back() + 3) * shape.kv_heads *
                                 shape.head_dim;  // 3 rows past the end stay poisoned
            const Twin tb = upload(table), ln = upload(lens), st = upload(starts);
            const Twin ko = poisoned_floats(out_n), vo = poisoned_floats(out_n);
            on_both([&](Device& d, Side s) {
              GatherKvArgs a;
              a.cache = bug ? with_shape_strides(c.desc(s)) : c.desc(s);
              a.block_table = tb.p<int32_t>(s);
              a.block_table_stride = stride;
              a.ctx_lens = ln.p<int32_t>(s);
              a.ctx_starts = st.p<int32_t>(s);
              a.k_out = ko.p<float>(s);
              a.v_out = shape.mla ? nullptr : vo.p<float>(s);
              a.num_seqs = static_cast<int32_t>(lens.size());
              d.gather_kv(a);
            });
            EXPECT_TRUE(same_floats(get<float>(ko, Side::host, out_n),
                                    get<float>(ko, Side::cuda, out_n)));
            EXPECT_TRUE(same_floats(get<float>(vo, Side::host, out_n),
                                    get<float>(vo, Side::cuda, out_n)));
          }
}

TEST_F(GpuCacheOps, FillBlocksWritesTheHostsBytes) {
  SCOPED_TRACE(trace_seed());
  const FillPattern patterns[] = {FillPattern::zero, FillPattern::nan, FillPattern::inf,
                                  FillPattern::random_bits};
  for (const CacheShape& shape : kShapes)
    for (DType t : kDtypes)
      for (KvLayout layout : kLayouts)
        for (int32_t bs : kBlockSizes)
          for (FillPattern p : patterns) {
            SCOPED_TRACE(config(t, layout, bs, shape) + " pattern " +
                         std::to_string(static_cast<int>(p)));
            const int32_t nb = 9;
            TwinCache c = cache(layout, t, nb, bs, shape.kv_heads, shape.head_dim,
                                FillPattern::random_bits);
            c.v_is_k = shape.mla;  // K and V pages are the same memory: V's bytes must win
            std::vector<int32_t> ids = {3, 1, 7, 8, 3, 5};  // odd blocks, one twice
            std::shuffle(ids.begin(), ids.end(), rng_);
            const Twin id = upload(ids);
            const uint64_t seed = rng_();
            on_both([&](Device& d, Side s) {
              d.fill_blocks(FillBlocksArgs{c.desc(s), id.p<int32_t>(s),
                                           static_cast<int32_t>(ids.size()), p, seed});
            });
            EXPECT_TRUE(same_bytes(get<unsigned char>(c.mem, Side::host, c.bytes()),
                                   get<unsigned char>(c.mem, Side::cuda, c.bytes())));
          }
}

}  // namespace
}  // namespace kv::gpu_test
