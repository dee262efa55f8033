// linear_attention_gpu_test.cpp — CUDA vs host for gated linear attention with its state in the
// block pool: fresh and continued sequences, decode (one-row) and prefill sequences, a sequence
// with no rows, a padded sequence (block -1: reads and writes nothing), and a pool whose unused
// bytes are stale random bits with NaN/Inf codes (a fresh sequence must never read them).
// head_dim 8, 40 and 64 keep the state in shared memory, 128 exercises the in-place global path.
//
// Tolerance: relative L2 <= 1e-5 per output row and per (block, head) state. The GPU runs the
// host's order (i ascending per value column); only FMA contraction of the update and the
// device expf of the gate differ. The host's own error against float64 is under 2e-6 for 300
// rows (measured), and the GPU's is the same size.
#include <sstream>

#include "gpu/gpu_test_support.h"

namespace kv::gpu_test {
namespace {

class GpuLinearAttention : public GpuTest {};

TEST_F(GpuLinearAttention, MatchesHostOverFreshContinuedPaddedAndEmptySequences) {
  SCOPED_TRACE(trace_seed());
  for (int32_t d : {8, 40, 64, 128})
    for (int32_t heads : {1, 3}) {
      std::ostringstream o;
      o << "head_dim " << d << " heads " << heads;
      SCOPED_TRACE(o.str());
      // Sequences: prefill (fresh), decode (continued), no rows (fresh), padded (-1), prefill
      // (continued), decode (fresh).
      const std::vector<int32_t> lens = {23, 1, 0, 1, 40, 1};
      const std::vector<int32_t> blocks = {4, 1, 6, -1, 2, 0};
      const std::vector<int32_t> initial = {0, 1, 0, 1, 1, 0};
      const int32_t nseq = static_cast<int32_t>(lens.size()), num_blocks = 8;
      std::vector<int32_t> starts(nseq + 1, 0);
      for (int32_t i = 0; i < nseq; ++i) starts[i + 1] = starts[i] + lens[i];
      const int32_t rows = starts.back();
      const int64_t width = int64_t{heads} * d;
      const int64_t block_stride = width * d + 17;  // blocks further apart than one state
      // The pool: stale random bits everywhere (NaN/Inf codes as f32), then sensible states in
      // the blocks of continued sequences.
      std::vector<float> pool(static_cast<size_t>(num_blocks * block_stride));
      host::fill_pattern(pool.data(), pool.size() * 4, FillPattern::random_bits, DType::f32,
                         rng_(), 0);
      for (int32_t s = 0; s < nseq; ++s)
        if (initial[s] && blocks[s] >= 0) {
          const std::vector<float> st = test::random_floats(rng_, width * d, -0.5f, 0.5f);
          std::copy(st.begin(), st.end(), pool.begin() + blocks[s] * block_stride);
        }
      const int64_t qkv_stride = width + 2, gate_stride = heads + 1, out_stride = width + 1;
      const float kscale = 1.0f / std::sqrt(static_cast<float>(d));
      std::vector<float> k = test::random_floats(rng_, rows * qkv_stride, -kscale, kscale);
      const Twin tpool = upload(pool);
      const Twin q = upload(test::random_floats(rng_, rows * qkv_stride));
      const Twin tk = upload(k);
      const Twin v = upload(test::random_floats(rng_, rows * qkv_stride));
      const Twin g = upload(test::random_floats(rng_, rows * gate_stride, -3.0f, 3.0f));
      const Twin ts = upload(starts), tb = upload(blocks), ti = upload(initial);
      const size_t out_n = static_cast<size_t>(rows + 1) * out_stride;
      const Twin out = poisoned_floats(out_n);
      on_both([&](Device& dv, Side s) {
        LinearAttnArgs a;
        a.state = tpool.p<float>(s);
        a.state_block_stride = block_stride;
        a.q = q.p<float>(s);
        a.k = tk.p<float>(s);
        a.v = v.p<float>(s);
        a.qkv_row_stride = qkv_stride;
        a.gate = g.p<float>(s);
        a.gate_row_stride = gate_stride;
        a.out = out.p<float>(s);
        a.out_row_stride = out_stride;
        a.seq_starts = ts.p<int32_t>(s);
        a.state_blocks = tb.p<int32_t>(s);
        a.has_initial_state = ti.p<int32_t>(s);
        a.num_seqs = nseq;
        a.num_heads = heads;
        a.head_dim = d;
        a.scale = kscale;
        dv.linear_attention(a);
      });
      const std::vector<float> ho = get<float>(out, Side::host, out_n);
      EXPECT_TRUE(close_rows(ho, get<float>(out, Side::cuda, out_n), out_stride, 1e-5));
      // The padded sequence's row (row starts[3]) is untouched on both; the rest is finite.
      EXPECT_TRUE(test::is_poison(ho[starts[3] * out_stride]));
      // The pool: states per (block, head) within tolerance, every other byte identical (NaN
      // positions included: a stale NaN in an unused block stays where it was).
      const std::vector<float> hp = get<float>(tpool, Side::host, pool.size());
      const std::vector<float> cp = get<float>(tpool, Side::cuda, pool.size());
      for (int32_t b = 0; b < num_blocks; ++b) {
        for (int32_t h = 0; h < heads; ++h) {
          const size_t off = static_cast<size_t>(b * block_stride + h * d * d);
          const std::vector<float> hs(hp.begin() + off, hp.begin() + off + d * d);
          const std::vector<float> cs(cp.begin() + off, cp.begin() + off + d * d);
          EXPECT_TRUE(close_rows(hs, cs, static_cast<size_t>(d) * d, 1e-5))
              << "state of block " << b << " head " << h;
        }
        const size_t tail = static_cast<size_t>(b * block_stride + width * d);
        const std::vector<float> ht(hp.begin() + tail, hp.begin() + (b + 1) * block_stride);
        const std::vector<float> ct(cp.begin() + tail, cp.begin() + (b + 1) * block_stride);
        EXPECT_TRUE(same_floats(ht, ct)) << "bytes past the state of block " << b;
      }
    }
}

}  // namespace
}  // namespace kv::gpu_test
