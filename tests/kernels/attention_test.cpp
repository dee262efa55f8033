// attention_test.cpp — varlen_attention (causal and context) and merge_states against float64
// references; empty key sets, GQA, v_dim < head_dim (MLA), padded rows, the -inf/-inf merge and
// NaN propagation.
#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kernels/attn_state.cuh"

#include <tuple>

namespace kv::test {
namespace {

// Float accumulation over at most a few dozen keys and exact inputs: relative L2 near 1e-6.
constexpr double kAttnTol = 2e-5;
// lse = m + log(d) in float: a few ulps of values of magnitude < 10.
constexpr double kLseTol = 1e-5;

struct VarlenCase {
  std::vector<int32_t> q_len, k_len;
  bool causal = false;
  int32_t kv_heads = 2, ratio = 1, head_dim = 12;
  int32_t v_dim = 0;  // 0: head_dim
};

void run_varlen(const VarlenCase& vc, Rng& rng) {
  const int32_t nq = vc.kv_heads * vc.ratio, hd = vc.head_dim, ns = int32_t(vc.q_len.size());
  const int32_t vd = vc.v_dim == 0 ? hd : vc.v_dim;
  const int32_t q_stride = nq * hd + 5, kv_stride = vc.kv_heads * hd + 3, out_stride = nq * vd + 2;
  std::vector<int32_t> qs = {0}, ks = {0};
  for (int32_t i = 0; i < ns; ++i) {
    qs.push_back(qs.back() + vc.q_len[i]);
    ks.push_back(ks.back() + vc.k_len[i]);
  }
  const int32_t rows = qs.back() + 2;  // two padding rows past the last sequence
  const std::vector<float> q = random_floats(rng, size_t(rows) * q_stride);
  const std::vector<float> k = random_floats(rng, size_t(ks.back() + 1) * kv_stride);
  const std::vector<float> v = random_floats(rng, size_t(ks.back() + 1) * kv_stride);
  std::vector<float> out(size_t(rows) * out_stride), lse(size_t(rows) * nq);
  poison(out);
  poison(lse);
  const float scale = 1.5f / std::sqrt(float(hd));
  VarlenAttnArgs a;  // by field: a positional initialiser silently shifts when a field is added
  a.q = q.data();
  a.q_row_stride = q_stride;
  a.k = k.data();
  a.v = v.data();
  a.kv_row_stride = kv_stride;
  a.q_starts = qs.data();
  a.k_starts = ks.data();
  a.out = out.data();
  a.out_row_stride = out_stride;
  a.lse = lse.data();
  a.num_seqs = ns;
  a.num_q_heads = nq;
  a.num_kv_heads = vc.kv_heads;
  a.head_dim = hd;
  a.v_dim = vc.v_dim;
  a.scale = scale;
  a.causal = vc.causal;
  host::varlen_attention(a);

  for (int32_t s = 0; s < ns; ++s)
    for (int32_t j = 0; j < vc.q_len[s]; ++j)
      for (int32_t h = 0; h < nq; ++h) {
        const int64_t r = qs[s] + j;
        const int32_t n = vc.causal ? std::min(j + 1, vc.k_len[s]) : vc.k_len[s];
        const float* qh = &q[r * q_stride + h * hd];
        const int64_t kv0 = int64_t(ks[s]) * kv_stride + (h / vc.ratio) * hd;
        std::vector<double> sc(n), ref(vd, 0.0);
        double m = -INFINITY, sum = 0.0;
        for (int32_t t = 0; t < n; ++t) {
          double dot = 0.0;
          for (int32_t f = 0; f < hd; ++f) dot += double(qh[f]) * k[kv0 + t * kv_stride + f];
          sc[t] = dot * scale;
          m = std::max(m, sc[t]);
        }
        for (int32_t t = 0; t < n; ++t) {
          const double p = std::exp(sc[t] - m);
          sum += p;
          for (int32_t f = 0; f < vd; ++f) ref[f] += p * v[kv0 + t * kv_stride + f];
        }
        const float* o = &out[r * out_stride + h * vd];
        const float l = lse[r * nq + h];
        SCOPED_TRACE(testing::Message()
                     << "seq " << s << " query " << j << " head " << h << " keys " << n);
        if (n == 0) {  // the empty state, exactly
          for (int32_t f = 0; f < vd; ++f) ASSERT_EQ(o[f], 0.0f);
          ASSERT_EQ(l, -INFINITY);
          continue;
        }
        for (double& x : ref) x /= sum;
        const double err = rel_l2(o, ref.data(), vd);
        ASSERT_FALSE(!(err <= kAttnTol)) << err;
        const double lse_ref = m + std::log(sum);
        ASSERT_FALSE(!(std::fabs(l - lse_ref) <= kLseTol)) << l << " vs " << lse_ref;
      }
  for (int32_t r = qs.back(); r < rows; ++r) {
    for (int32_t i = 0; i < out_stride; ++i) ASSERT_TRUE(is_poison(out[r * out_stride + i]));
    for (int32_t h = 0; h < nq; ++h) ASSERT_TRUE(is_poison(lse[r * nq + h]));
  }
  for (int32_t r = 0; r < qs.back(); ++r)  // the gap between a row's heads and its stride
    for (int32_t i = nq * vd; i < out_stride; ++i) ASSERT_TRUE(is_poison(out[r * out_stride + i]));
}

TEST(VarlenAttention, ContextAttentionMatchesReference) {
  Rng rng(31);
  for (int32_t ratio : {1, 4}) {
    run_varlen({{3, 1, 5, 23, 1}, {0, 1, 17, 9, 40}, false, 2, ratio, 12}, rng);
    run_varlen({{1}, {1}, false, 1, ratio, 16}, rng);
  }
}

TEST(VarlenAttention, CausalAttentionMatchesReference) {
  Rng rng(32);
  for (int32_t ratio : {1, 4}) {
    run_varlen({{0, 1, 5, 23}, {0, 1, 5, 23}, true, 2, ratio, 12}, rng);
    run_varlen({{7}, {7}, true, 3, ratio, 8}, rng);
  }
}

// MLA shape (head_dim = R + P, v_dim = R): scores over all head_dim features, the output of a head
// is the first v_dim features of V, written at h * v_dim.
TEST(VarlenAttention, VDimSmallerThanHeadDimMatchesReference) {
  Rng rng(36);
  for (int32_t ratio : {1, 4, 7})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << "ratio " << ratio << " causal " << causal);
      run_varlen({{3, 1, 0, 17}, {causal ? 3 : 6, 1, 0, 17}, causal, 1, ratio, 24, 19}, rng);
      run_varlen({{1}, {1}, causal, 1, ratio, 40, 32}, rng);
      run_varlen({{5, 2}, {5, 2}, causal, 2, ratio, 12, 12}, rng);  // v_dim == head_dim, explicit
    }
}

// kv_dtype: attending to raw K/V "as the cache stores them" is attending to K/V rounded first.
TEST(VarlenAttention, KvDtypeReadsKAndVAsTheCacheStoresThem) {
  Rng rng(38);
  const int32_t hd = 12, n = 9, heads = 2;
  const int64_t stride = heads * hd;
  const std::vector<float> q = random_floats(rng, n * stride);
  const std::vector<float> k = random_floats(rng, n * stride), v = random_floats(rng, n * stride);
  const std::vector<int32_t> starts = {0, n};
  for (auto [dtype, ks, vs] : {std::tuple{DType::bf16, 1.0f, 1.0f},
                               std::tuple{DType::fp8_e4m3, 0.0625f, 0.25f},
                               std::tuple{DType::fp8_e4m3, 0.05f, 3.0f}}) {
    SCOPED_TRACE(testing::Message() << "dtype " << static_cast<int>(dtype) << " " << ks << " " << vs);
    std::vector<float> kr(k), vr(v);
    for (auto& x : kr) x = round_through_scaled(x, dtype, ks);
    for (auto& x : vr) x = round_through_scaled(x, dtype, vs);
    auto run = [&](const std::vector<float>& kk, const std::vector<float>& vv, bool round) {
      std::vector<float> out(n * stride), lse(n * heads);
      VarlenAttnArgs a;
      a.q = q.data();
      a.q_row_stride = stride;
      a.k = kk.data();
      a.v = vv.data();
      a.kv_row_stride = stride;
      a.q_starts = a.k_starts = starts.data();
      a.out = out.data();
      a.out_row_stride = stride;
      a.lse = lse.data();
      a.num_seqs = 1;
      a.num_q_heads = a.num_kv_heads = heads;
      a.head_dim = hd;
      a.scale = 0.3f;
      a.causal = true;
      if (round) {
        a.kv_dtype = dtype;
        a.k_scale = ks;
        a.v_scale = vs;
      }
      host::varlen_attention(a);
      out.insert(out.end(), lse.begin(), lse.end());
      return out;
    };
    const std::vector<float> want = run(kr, vr, false), got = run(k, v, true), raw = run(k, v, false);
    EXPECT_EQ(0, memcmp(want.data(), got.data(), want.size() * sizeof(float)));
    EXPECT_NE(0, memcmp(want.data(), raw.data(), want.size() * sizeof(float)));  // it matters
  }
}

// NaN in V's features past v_dim (MLA's rope part, a separate buffer from k here so K stays
// clean) changes nothing: they are never read as V.
TEST(VarlenAttention, RopeFeaturesOfVAreNeverRead) {
  Rng rng(37);
  const int32_t hd = 8, vd = 5, n = 4, stride = hd;
  const std::vector<float> q = random_floats(rng, hd), k = random_floats(rng, n * stride);
  std::vector<float> v = random_floats(rng, n * stride);
  std::vector<float> out(vd + 1), lse(1);
  const std::vector<int32_t> qs = {0, 1}, ks = {0, n};
  VarlenAttnArgs a;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.kv_row_stride = stride;
  a.q_starts = qs.data();
  a.k_starts = ks.data();
  a.out = out.data();
  a.out_row_stride = vd;
  a.lse = lse.data();
  a.num_seqs = a.num_q_heads = a.num_kv_heads = 1;
  a.head_dim = hd;
  a.v_dim = vd;
  poison(out);
  host::varlen_attention(a);
  const std::vector<float> clean(out.begin(), out.end());
  for (int32_t t = 0; t < n; ++t)
    for (int32_t f = vd; f < hd; ++f) v[t * stride + f] = NAN;
  poison(out);
  host::varlen_attention(a);
  EXPECT_TRUE(all_finite(out.data(), vd));
  for (int32_t f = 0; f < vd; ++f) EXPECT_EQ(f32_bits(out[f]), f32_bits(clean[f]));
  EXPECT_TRUE(is_poison(out[vd]));  // nothing past the head's v_dim features
  a.v_dim = hd + 1;
  EXPECT_THROW(host::varlen_attention(a), std::invalid_argument);
  a.v_dim = -1;
  EXPECT_THROW(host::varlen_attention(a), std::invalid_argument);
}

// ---- merge_states ------------------------------------------------------------------------------

struct MergeCase {
  int32_t rows = 23, merge = 9, heads = 3, hd = 12, stride = 3 * 12 + 4;
  std::vector<float> oa, la, ob, lb, out, lse;

  MergeCase(Rng& rng) {
    oa = random_floats(rng, size_t(rows + 1) * stride);
    ob = random_floats(rng, size_t(rows + 1) * stride);
    la = random_floats(rng, size_t(rows + 1) * heads, -4, 6);
    lb = random_floats(rng, size_t(rows + 1) * heads, -4, 6);
    out.resize(size_t(rows + 1) * stride);
    lse.resize(size_t(rows + 1) * heads);
    poison(out);
    poison(lse);
  }
  MergeStatesArgs args(bool with_lse) {
    return {oa.data(), la.data(), ob.data(), lb.data(), out.data(), with_lse ? lse.data() : nullptr,
            stride,    rows,      merge,     heads,     hd};
  }
  void set_state(std::vector<float>& o, std::vector<float>& l, int32_t r, int32_t h, float value,
                 float lse_v) {
    for (int32_t f = 0; f < hd; ++f) o[r * stride + h * hd + f] = value;
    l[r * heads + h] = lse_v;
  }
};

TEST(MergeStates, MergesContextRowsAndCopiesTheRest) {
  Rng rng(33);
  for (bool with_lse : {true, false}) {
    MergeCase m(rng);
    m.set_state(m.oa, m.la, m.merge, 1, NAN, NAN);  // an unwritten context state past num_merge
    host::merge_states(m.args(with_lse));
    for (int32_t r = 0; r <= m.rows; ++r)
      for (int32_t h = 0; h < m.heads; ++h) {
        const int64_t li = int64_t(r) * m.heads + h;
        const float* o = &m.out[r * m.stride + h * m.hd];
        if (r == m.rows) {  // past num_rows: untouched
          for (int32_t f = 0; f < m.hd; ++f) ASSERT_TRUE(is_poison(o[f]));
          ASSERT_TRUE(is_poison(m.lse[li]));
          continue;
        }
        std::vector<double> ref(m.hd);
        double lse_ref = m.lb[li];
        if (r < m.merge) {
          const double a = m.la[li], b = m.lb[li], mx = std::max(a, b);
          const double ea = std::exp(a - mx), eb = std::exp(b - mx);
          lse_ref = mx + std::log(ea + eb);
          for (int32_t f = 0; f < m.hd; ++f)
            ref[f] =
                (ea * m.oa[r * m.stride + h * m.hd + f] + eb * m.ob[r * m.stride + h * m.hd + f]) /
                (ea + eb);
        } else {
          for (int32_t f = 0; f < m.hd; ++f) ref[f] = m.ob[r * m.stride + h * m.hd + f];
        }
        // One exp, a division and a weighted sum in float: a few ulps.
        const double err = rel_l2(o, ref.data(), m.hd);
        ASSERT_FALSE(!(err <= 1e-6)) << r << " " << h << " " << err;
        if (with_lse)
          ASSERT_FALSE(!(std::fabs(m.lse[li] - lse_ref) <= 1e-5)) << r << " " << h;
        else
          ASSERT_TRUE(is_poison(m.lse[li]));
      }
    for (int32_t r = 0; r < m.rows; ++r)
      for (int32_t i = m.heads * m.hd; i < m.stride; ++i)
        ASSERT_TRUE(is_poison(m.out[r * m.stride + i]));
  }
}

TEST(MergeStates, TwoEmptyStatesGiveZeroAndMinusInfinity) {
  Rng rng(34);
  MergeCase m(rng);
  m.set_state(m.oa, m.la, 2, 0, 0.0f, -INFINITY);
  m.set_state(m.ob, m.lb, 2, 0, 0.0f, -INFINITY);
  m.set_state(m.oa, m.la, 3, 2, 0.0f, -INFINITY);  // empty context, non-empty new tokens: b
  host::merge_states(m.args(true));
  for (int32_t f = 0; f < m.hd; ++f) ASSERT_EQ(m.out[2 * m.stride + f], 0.0f);
  EXPECT_EQ(m.lse[2 * m.heads], -INFINITY);
  for (int32_t f = 0; f < m.hd; ++f)
    ASSERT_EQ(m.out[3 * m.stride + 2 * m.hd + f], m.ob[3 * m.stride + 2 * m.hd + f]);
  EXPECT_EQ(m.lse[3 * m.heads + 2], m.lb[3 * m.heads + 2]);
}

TEST(MergeStates, NanInAnInputStaysNan) {
  Rng rng(35);
  MergeCase m(rng);
  m.oa[1 * m.stride + 0 * m.hd + 4] = NAN;        // NaN output, finite lse
  m.la[4 * m.heads + 1] = NAN;                    // NaN lse
  m.set_state(m.oa, m.la, 5, 2, NAN, -INFINITY);  // NaN output behind an lse of -inf: 0 × NaN
  host::merge_states(m.args(true));
  EXPECT_TRUE(std::isnan(m.out[1 * m.stride + 4]));
  EXPECT_TRUE(std::isfinite(m.lse[1 * m.heads]));
  for (int32_t f = 0; f < m.hd; ++f) EXPECT_TRUE(std::isnan(m.out[4 * m.stride + 1 * m.hd + f]));
  EXPECT_TRUE(std::isnan(m.lse[4 * m.heads + 1]));
  EXPECT_TRUE(std::isnan(m.out[5 * m.stride + 2 * m.hd]));
  EXPECT_TRUE(all_finite(&m.out[6 * m.stride], m.heads * m.hd));  // neighbours unaffected
}

TEST(MergeWeights, EdgeCases) {
  const MergeWeights e = merge_weights(-INFINITY, -INFINITY);
  EXPECT_EQ(e.wa, 0.0f);
  EXPECT_EQ(e.wb, 0.0f);
  EXPECT_EQ(e.lse, -INFINITY);
  const MergeWeights one = merge_weights(-INFINITY, 1.5f);
  EXPECT_EQ(one.wa, 0.0f);
  EXPECT_EQ(one.wb, 1.0f);
  EXPECT_EQ(one.lse, 1.5f);
  const MergeWeights same = merge_weights(0.25f, 0.25f);
  EXPECT_EQ(same.wa, 0.5f);
  EXPECT_FALSE(!(std::fabs(same.lse - (0.25f + std::log(2.0f))) <= 1e-6f));  // one logf
  EXPECT_TRUE(std::isnan(merge_weights(NAN, 1.0f).lse));
  EXPECT_TRUE(std::isnan(merge_weights(-INFINITY, NAN).wb));
}

}  // namespace
}  // namespace kv::test
