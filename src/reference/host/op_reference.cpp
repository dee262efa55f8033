// op_reference.cpp — the float64 op and its error estimate (op_reference.h has the formula).
#include "reference/host/op_reference.h"
#include "reference/host/ref_sums.h"

#include <algorithm>
#include <cmath>
#include <vector>


namespace kv {
namespace {

double sq(double x) { return x * x; }

constexpr int32_t kSampledSums = 8;

// x rounded to nearest (ties to even) in the float format of unit roundoff u: 1/u significant
// bits (bf16: 8, f16: 11), the exponent range left aside. u = 0: x.
double round_to(double x, double u) {
  if (u <= 0.0 || x == 0.0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);  // [0.5, 1)
  return std::ldexp(std::nearbyint(m / u), e) * u;
}

const float* row(const float* base, int64_t stride, int32_t t) {
  return base + static_cast<int64_t>(t) * stride;
}

}  // namespace

double attend_op(const OpHeadInputs& in, const OpRounding& r, double* out) {
  const int32_t n = in.n, dk = in.dk, dv = in.dv;
  if (n <= 0) {  // no key: the empty row's convention (o = 0) has no rounding
    for (int32_t d = 0; d < dv; ++d) out[d] = 0.0;
    return 0.0;
  }
  // Pass 1, over K: the scores, Σ_i (q_i k_ti)² and, where the op rounds q, δs_t = τ (q̃ − q)·k_t.
  std::vector<double> dq(static_cast<size_t>(dk));
  bool q_rounds = false;
  for (int32_t i = 0; i < dk; ++i) q_rounds |= (dq[i] = round_to(in.q[i], r.u_q) - in.q[i]) != 0.0;
  std::vector<double> s(static_cast<size_t>(n)), a(static_cast<size_t>(n)), ds(static_cast<size_t>(n));
  double m = -INFINITY;
  for (int32_t t = 0; t < n; ++t) {
    const float* k = row(in.k, in.stride, t);
    double qk = 0.0, qk2 = 0.0;
    ref::dot_and_squares(in.q, k, static_cast<size_t>(dk), &qk, &qk2);
    m = std::max(m, s[t] = qk * in.scale);
    a[t] = qk2 * in.scale * in.scale;
    ds[t] = q_rounds ? ref::dot(dq.data(), k, static_cast<size_t>(dk)) * in.scale : 0.0;
  }
  // e_t = exp(s_t − m), kept for pass 2.
  std::vector<double> e(static_cast<size_t>(n));
  double denom = 0.0;
  for (int32_t t = 0; t < n; ++t) denom += (e[t] = std::exp(s[t] - m));
  // Pass 2, over V, every sum the estimate needs at once: S_t the partial sums of P·V (their last
  // is o), and w_t the scores term's weight of r_t², taken as ‖v_t‖² + ‖o‖² (r_t = ‖v_t − o‖
  // needs o, a second pass; the two differ where V rows share a feature, such as a sentinel,
  // which r_t leaves out: there the term is larger than it need be).
  std::vector<double> ds_v(static_cast<size_t>(dv), 0.0);
  for (int32_t d = 0; d < dv; ++d) out[d] = 0.0;
  double partial_pv = 0.0, partial_p = 0.0, weight = 0.0, pv = 0.0, mean_norm = 0.0;
  double w_sum = 0.0, w_v2 = 0.0, ds_sum = 0.0;
  for (int32_t t = 0; t < n; ++t) {
    const double p = e[t] / denom;
    const double w = sq(p) * ((sq(r.u_kv) + dk * sq(r.u_acc)) * a[t] +
                              sq(r.u_acc) * (1.0 + sq(s[t]) + sq(s[t] - m)));
    const double pds = p * ds[t];
    const float* v = row(in.v, in.stride, t);
    const double v2 = ref::add_scaled_row(p, v, static_cast<size_t>(dv), out);
    // ‖S_t‖² of every kSampledSums-th partial sum, standing for the ones between: a partial sum
    // moves by one weight at a time, and a norm per key would be the costliest term here.
    if (t % kSampledSums == kSampledSums - 1 || t == n - 1) {
      partial_pv += ref::squares(out, static_cast<size_t>(dv)) * (t % kSampledSums + 1);
    }
    if (q_rounds)
      for (int32_t d = 0; d < dv; ++d) ds_v[d] += pds * v[d];
    weight += p;
    partial_p += sq(weight);
    pv += sq(p) * v2;
    mean_norm += p * std::sqrt(v2);
    w_sum += w;
    w_v2 += w * v2;
    ds_sum += pds;
  }
  double o2 = 0.0, qterm = 0.0;
  double rounded2 = 0.0;  // ‖round(o) − o‖² in the output's precision
  for (int32_t d = 0; d < dv; ++d) {
    o2 += sq(out[d]);
    qterm += sq(ds_v[d] - out[d] * ds_sum);  // Σ_t p_t δs_t (v_t − o)
    rounded2 += sq(round_to(out[d], r.u_out) - out[d]);
  }
  const double scores = w_v2 + o2 * w_sum;  // Σ_t w_t (‖v_t‖² + ‖o‖²)
  const double e2 = qterm + scores + (sq(r.u_p) + sq(r.u_kv)) * pv +
                    sq(r.u_acc) * (partial_pv + o2 * partial_p) + rounded2 +
                    sq(r.u_out) * (r.out_roundings - 1) * sq(mean_norm) + sq(r.u_acc) * o2;
  return std::sqrt(e2);
}

double attend_op_projected(const OpHeadInputs& in, const OpRounding& r, const float* w,
                           int32_t dout, double* out) {
  std::vector<double> lat(static_cast<size_t>(in.dv));
  const double e_lat = attend_op(in, r, lat.data());
  double wf2 = 0.0, o2 = 0.0;
  for (int32_t d = 0; d < dout; ++d) {
    const float* wr = w + static_cast<int64_t>(d) * in.dv;
    out[d] = ref::dot(lat.data(), wr, static_cast<size_t>(in.dv));
    wf2 += ref::squares(wr, static_cast<size_t>(in.dv));
    o2 += sq(out[d]);
  }
  // Through w: a random projection scales an error's norm by ‖w‖_F / sqrt(dv); w's own float sum
  // adds sqrt(dv) roundings of the output's size.
  return std::sqrt(sq(e_lat) * wf2 / in.dv + in.dv * sq(r.u_acc) * o2);
}

}  // namespace kv
