// attention_gpu_test.cpp — CUDA vs host for the attention ops: varlen_attention (causal and not),
// merge_states, and paged_decode (the production split-KV kernel of kernels/cuda/paged_decode.cu,
// whichever of its paths CudaDevice gets for the descriptor).
//
// Tolerance: relative L2 per output row <= 1e-5, lse within 1e-6 * (1 + |lse|). Why: both
// devices accumulate in float32, in different orders (the GPU reduces dot products in warp trees
// and runs an online softmax over tiles; the host sums sequentially with a two-pass softmax). The
// host op's own error against float64 is at most 2e-6 (measured: head_dim 576, 600 keys, peaky
// scores) and the GPU's is of the same size, so their difference stays under ~4e-6; a real bug
// (a wrong key, a missed tile, a lost rescale) gives errors of 1e-2 and more. Classes must agree
// exactly: unwritten rows stay poisoned on both, NaN rows are the same rows, -inf lse the same.
// paged_decode uses the tolerances of its own paths (tests/bench/decode_check.cu): 1e-4 for the
// float32 paths (generic, gqa_tc), and for mla_tc, which runs Q·K^T and P·V on bf16 (fp8: f16)
// tensor cores as FlashMLA does, 2e-2 (bf16 cache) / 5e-3 (fp8 cache) per (row, head).
#include <sstream>

#include "kernels/cuda/decode_path.h"
#include "tests/support/decode_tolerance.h"
#include "gpu/gpu_test_support.h"

namespace kv::gpu_test {
namespace {

constexpr double kAttnTol = 1e-5;
constexpr double kLseTol = 1e-6;

struct AttnShape {
  int32_t q_heads, kv_heads, head_dim, v_dim;
  bool mla;  // K and V are the same latent rows; V is their first v_dim features
};

constexpr AttnShape kAttnShapes[] = {
    {3, 3, 8, 8, false},     // MHA
    {8, 2, 64, 64, false},   // GQA 4
    {4, 1, 40, 32, true},    // MLA 32 + 8
    {2, 1, 576, 512, true},  // MLA 512 + 64 (DeepSeek)
};

std::string describe(const AttnShape& s) {
  std::ostringstream o;
  o << "q_heads " << s.q_heads << " kv_heads " << s.kv_heads << " head_dim " << s.head_dim
    << " v_dim " << s.v_dim << (s.mla ? " (mla)" : "");
  return o.str();
}

class GpuAttention : public GpuTest {};

// K/V read "as the cache stores them" (the new tokens of a prefill): none, bf16, fp8 with the
// power-of-two scales scenarios use, and f32 with a scale (x / s * s, still a rounding).
struct StoredAs {
  DType t;
  float k_scale, v_scale;
};
constexpr StoredAs kStoredAs[] = {{DType::f32, 1.0f, 1.0f},
                                  {DType::bf16, 1.0f, 1.0f},
                                  {DType::fp8_e4m3, 0.015625f, 0.0078125f},
                                  {DType::f32, 3.0f, 0.7f}};

TEST_F(GpuAttention, VarlenAttentionMatchesHost) {
  SCOPED_TRACE(trace_seed());
  for (const AttnShape& sh : kAttnShapes)
    for (bool causal : {false, true})
      for (const StoredAs& st : kStoredAs)
        for (bool with_nan : {false, true}) {
          if (with_nan && st.t != DType::f32) continue;
          SCOPED_TRACE(describe(sh) + (causal ? " causal" : " non-causal") + " kv as " +
                       test::dtype_name(st.t) + " scales " + std::to_string(st.k_scale) + "/" +
                       std::to_string(st.v_scale) + (with_nan ? " with a NaN key" : ""));
          // Empty and single-token sequences, odd counts; causal needs q_len == k_len.
          const std::vector<int32_t> k_lens = {0, 5, 1, 40, 113};
          const std::vector<int32_t> q_lens =
              causal ? k_lens : std::vector<int32_t>{1, 0, 3, 17, 2};
          std::vector<int32_t> qs(6, 0), ks(6, 0);
          for (int i = 0; i < 5; ++i) qs[i + 1] = qs[i] + q_lens[i], ks[i + 1] = ks[i] + k_lens[i];
          const int32_t rows = qs.back(), keys = ks.back();
          const int64_t q_stride = int64_t{sh.q_heads} * sh.head_dim + 3;
          const int64_t kv_stride = int64_t{sh.kv_heads} * sh.head_dim + 2;
          const int64_t out_stride = int64_t{sh.q_heads} * sh.v_dim + 1;
          std::vector<float> q = test::random_floats(rng_, rows * q_stride, -4.0f, 4.0f);
          std::vector<float> k = test::random_floats(rng_, keys * kv_stride);
          if (with_nan) k[(ks[3] + 7) * kv_stride + 1] = NAN;  // key 7 of sequence 3, kv head 0
          const Twin tq = upload(q), tk = upload(k);
          const Twin tv = sh.mla ? tk : upload(test::random_floats(rng_, keys * kv_stride));
          const Twin tqs = upload(qs), tks = upload(ks);
          const size_t out_n = static_cast<size_t>(rows + 2) * out_stride;
          const size_t lse_n = static_cast<size_t>(rows + 2) * sh.q_heads;
          const Twin out = poisoned_floats(out_n), lse = poisoned_floats(lse_n);
          on_both([&](Device& d, Side s) {
            VarlenAttnArgs a;
            a.q = tq.p<float>(s);
            a.q_row_stride = q_stride;
            a.k = tk.p<float>(s);
            a.v = tv.p<float>(s);
            a.kv_row_stride = kv_stride;
            a.q_starts = tqs.p<int32_t>(s);
            a.k_starts = tks.p<int32_t>(s);
            a.out = out.p<float>(s);
            a.out_row_stride = out_stride;
            a.lse = lse.p<float>(s);
            a.num_seqs = 5;
            a.num_q_heads = sh.q_heads;
            a.num_kv_heads = sh.kv_heads;
            a.head_dim = sh.head_dim;
            a.v_dim = sh.mla ? sh.v_dim : 0;
            a.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
            a.causal = causal;
            a.kv_dtype = st.t;
            a.k_scale = st.k_scale;
            a.v_scale = st.v_scale;
            d.varlen_attention(a);
          });
          EXPECT_TRUE(close_rows(get<float>(out, Side::host, out_n),
                                 get<float>(out, Side::cuda, out_n), out_stride, kAttnTol));
          EXPECT_TRUE(close_scalars(get<float>(lse, Side::host, lse_n),
                                    get<float>(lse, Side::cuda, lse_n), kLseTol));
        }
}

TEST_F(GpuAttention, MergeStatesMatchesHostIncludingEmptyAndNaNStates) {
  SCOPED_TRACE(trace_seed());
  const int32_t rows = 11, heads = 3, hd = 40;
  const int64_t stride = heads * hd + 2;
  for (int32_t num_merge : {0, 7, rows})
    for (bool write_lse : {true, false})
      for (bool in_place : {false, true}) {
        SCOPED_TRACE("num_merge " + std::to_string(num_merge) + (write_lse ? "" : " lse=null") +
                     (in_place ? " out=out_b" : ""));
        std::vector<float> la = test::random_floats(rng_, rows * heads, -6.0f, 6.0f);
        std::vector<float> lb = test::random_floats(rng_, rows * heads, -6.0f, 6.0f);
        std::vector<float> oa = test::random_floats(rng_, rows * stride);
        std::vector<float> ob = test::random_floats(rng_, rows * stride);
        la[0] = lb[0] = -INFINITY;  // both empty: 0 and -inf, never NaN
        la[4] = -INFINITY;          // context empty
        lb[8] = -INFINITY;          // new tokens empty
        la[10] = NAN;               // a NaN lse reaches the output
        oa[4 * stride + 5] = NAN;   // an unwritten context output of a merged row
        la[9 * heads + 1] = NAN;    // a NaN lse in a copied row (rows >= num_merge ignore a)
        lb[rows * heads - 1] = -INFINITY;
        const Twin ta = upload(oa), tb = upload(ob), tla = upload(la), tlb = upload(lb);
        const size_t out_n = static_cast<size_t>(rows + 1) * stride;
        const Twin out = in_place ? tb : poisoned_floats(out_n);
        const Twin lse = poisoned_floats(static_cast<size_t>(rows + 1) * heads);
        on_both([&](Device& d, Side s) {
          MergeStatesArgs a;
          a.out_a = ta.p<float>(s);
          a.lse_a = tla.p<float>(s);
          a.out_b = tb.p<float>(s);
          a.lse_b = tlb.p<float>(s);
          a.out = out.p<float>(s);
          a.lse = write_lse ? lse.p<float>(s) : nullptr;
          a.row_stride = stride;
          a.num_rows = rows;
          a.num_merge = num_merge;
          a.num_heads = heads;
          a.head_dim = hd;
          d.merge_states(a);
        });
        const size_t n = in_place ? static_cast<size_t>(rows) * stride : out_n;
        // One weighted sum per element, maybe fused into an FMA on the GPU: within 1e-6.
        EXPECT_TRUE(close_rows(get<float>(out, Side::host, n), get<float>(out, Side::cuda, n),
                               stride, 1e-6));
        const size_t ln = static_cast<size_t>(rows + 1) * heads;
        EXPECT_TRUE(close_scalars(get<float>(lse, Side::host, ln), get<float>(lse, Side::cuda, ln),
                                  1e-6));
      }
}

// Paged decode over a cache written by the host ops (identical bytes on both devices), one query
// per row, split-KV metadata as the engine builds it, a padded row (seq_len 0: writes nothing)
// and, optionally, one sequence whose last block was not zeroed: the whole-tile P·V must turn its
// stale NaN tail into NaN output on both devices (the seed-000 mechanism).
TEST_F(GpuAttention, PagedDecodeMatchesHost) {
  SCOPED_TRACE(trace_seed());
  const DType dtypes[] = {DType::bf16, DType::f16, DType::f32, DType::fp8_e4m3};
  for (const AttnShape& sh : kAttnShapes)
    for (DType t : dtypes)
      for (KvLayout layout : {KvLayout::kv_separate, KvLayout::kv_interleaved})
        for (int32_t bs : {1, 3, 7, 16})
          for (bool stale_tail : {false, true}) {
            SCOPED_TRACE(describe(sh) + " " + test::dtype_name(t) +
                         (layout == KvLayout::kv_separate ? " plain" : " interleaved") + " bs " +
                         std::to_string(bs) + (stale_tail ? " stale tail" : ""));
            const std::vector<int32_t> lens = {5, 0, 1, bs * 3 + 1, 37, bs};  // row 1 padded
            const int32_t rows = static_cast<int32_t>(lens.size());
            const int32_t table_stride = 37 / bs + 3;
            const int32_t nb = test::blocks_needed(lens, bs) + 1;
            // Staging copy on the host: every element a NaN code (stale, poisoned memory), then
            // zero_blocks + write_kv per sequence, as the engine does.
            const size_t bytes = static_cast<size_t>(
                layer_cache_bytes(nb, bs, sh.kv_heads, sh.head_dim, t));
            std::vector<unsigned char> staging(bytes);
            host::fill_pattern(staging.data(), bytes, FillPattern::nan, t, 0, 0);
            PagedKv sc = make_paged_kv(staging.data(), layout, t, nb, bs, sh.kv_heads,
                                       sh.head_dim);
            if (t == DType::fp8_e4m3) sc.k_scale = 0.02f, sc.v_scale = 0.01f;
            if (sh.mla) sc.v = sc.k, sc.v_scale = sc.k_scale;
            const std::vector<int32_t> table =
                test::shuffled_tables(rng_, nb, bs, lens, table_stride);
            const int64_t row = int64_t{sh.kv_heads} * sh.head_dim;
            for (int32_t r = 0; r < rows; ++r) {
              const int32_t len = lens[r];
              if (len == 0) continue;
              const int32_t nblk = (len + bs - 1) / bs;
              // stale_tail: row 3's last block is not zeroed (its tail holds random bytes).
              const bool skip_last = stale_tail && r == 3 && len % bs != 0;
              host::fill_blocks(FillBlocksArgs{sc, &table[r * table_stride],
                                               nblk - (skip_last ? 1 : 0), FillPattern::zero, 0});
              std::vector<float> k = test::random_floats(rng_, len * row);
              std::vector<float> v = test::random_floats(rng_, len * row);
              std::vector<int64_t> slots(len);
              for (int32_t i = 0; i < len; ++i)
                slots[i] = int64_t{table[r * table_stride + i / bs]} * bs + i % bs;
              WriteKvArgs w;
              w.cache = sc;
              w.k = k.data();
              w.v = sh.mla ? nullptr : v.data();
              w.k_row_stride = w.v_row_stride = row;
              w.slot_mapping = slots.data();
              w.num_tokens = len;
              host::write_kv(w);
            }
            TwinCache c = cache_holding(staging, layout, t, nb, bs, sh.kv_heads, sh.head_dim);
            c.k_scale = sc.k_scale;
            c.v_scale = sc.v_scale;
            c.v_is_k = sh.mla;
            // Split plan: chunks of 2 blocks; a padded row has 0 splits.
            const int32_t chunk = 2 * bs;
            std::vector<int32_t> meta = {chunk};
            int32_t max_splits = 1;
            for (int32_t len : lens) {
              meta.push_back((len + chunk - 1) / chunk);
              max_splits = std::max(max_splits, meta.back());
            }
            const int64_t q_stride = int64_t{sh.q_heads} * sh.head_dim + 1;
            const int64_t out_stride = int64_t{sh.q_heads} * sh.v_dim;
            const Twin q = upload(test::random_floats(rng_, rows * q_stride, -3.0f, 3.0f));
            const Twin tt = upload(table), tl = upload(lens), tm = upload(meta);
            const size_t out_n = static_cast<size_t>(rows) * out_stride;
            const Twin out = poisoned_floats(out_n);
            const size_t ws = static_cast<size_t>(rows) * max_splits * sh.q_heads;
            const Twin po = poisoned_floats(ws * sh.v_dim), pl = poisoned_floats(ws);
            const auto args = [&](Side s) {
              PagedDecodeArgs a;
              a.cache = c.desc(s);
              a.q = q.p<float>(s);
              a.q_row_stride = q_stride;
              a.out = out.p<float>(s);
              a.out_row_stride = out_stride;
              a.block_table = tt.p<int32_t>(s);
              a.block_table_stride = table_stride;
              a.seq_lens = tl.p<int32_t>(s);
              a.split_meta = tm.p<int32_t>(s);
              a.partial_out = po.p<float>(s);
              a.partial_lse = pl.p<float>(s);
              a.max_splits = max_splits;
              a.num_rows = rows;
              a.num_q_heads = sh.q_heads;
              a.v_dim = sh.mla ? sh.v_dim : 0;
              a.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
              return a;
            };
            const cuda::DecodePath path = cuda::decode_path_for(args(Side::cuda));
            const double tol = test::decode_path_tolerance(path, t);
            SCOPED_TRACE(std::string("decode path ") + cuda::decode_path_name(path));
            on_both([&](Device& d, Side s) { d.paged_decode(args(s)); });
            const std::vector<float> ho = get<float>(out, Side::host, out_n);
            const std::vector<float> co = get<float>(out, Side::cuda, out_n);
            EXPECT_TRUE(close_rows(ho, co, sh.v_dim, tol));  // per (row, head)
            if (stale_tail && lens[3] % bs != 0) {
              // The test exercises the mechanism: the host's row 3 is NaN (p = 0 times a stale
              // NaN), so close_rows above has checked that the GPU's row 3 is NaN too.
              EXPECT_TRUE(std::isnan(ho[3 * out_stride])) << "row 3 should be NaN on the host";
            }
          }
}

}  // namespace
}  // namespace kv::gpu_test
