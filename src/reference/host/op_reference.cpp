// op_reference.cpp — the float64 op and its error estimate (op_reference.h has the formula).
#include "reference/host/op_reference.h"

#include <cmath>
#include <vector>

#include "reference/host/ref_math.h"

namespace kv {
namespace {

double sq(double x) { return x * x; }

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
  std::vector<double> s(static_cast<size_t>(n)), a(static_cast<size_t>(n));
  for (int32_t t = 0; t < n; ++t) {
    const float* k = row(in.k, in.stride, t);
    double dot = 0.0, dot2 = 0.0;
    for (int32_t i = 0; i < dk; ++i) {
      const double qk = static_cast<double>(in.q[i]) * k[i];
      dot += qk;
      dot2 += qk * qk;
    }
    s[t] = dot * in.scale;
    a[t] = dot2 * in.scale * in.scale;
  }
  ref::attend(s, n, [&](int32_t t) { return row(in.v, in.stride, t); }, dv, out);

  double m = s[0], denom = 0.0;
  for (int32_t t = 1; t < n; ++t) m = std::max(m, s[t]);
  std::vector<double> p(static_cast<size_t>(n)), rt(static_cast<size_t>(n));
  for (int32_t t = 0; t < n; ++t) denom += (p[t] = std::exp(s[t] - m));
  double o2 = 0.0, rounded2 = 0.0;  // ‖o‖², and ‖round(o) − o‖² in the output's precision
  for (int32_t d = 0; d < dv; ++d) {
    o2 += sq(out[d]);
    rounded2 += sq(round_to(out[d], r.u_out) - out[d]);
  }
  // The op's rounding of q, exactly: its first-order effect on the output,
  // Σ_t p_t δs_t (v_t − o) with δs_t = τ (q̃ − q)·k_t.
  std::vector<double> dq(static_cast<size_t>(dk), 0.0), dout(static_cast<size_t>(dv), 0.0);
  bool q_rounds = false;
  for (int32_t i = 0; i < dk; ++i) q_rounds |= (dq[i] = round_to(in.q[i], r.u_q) - in.q[i]) != 0.0;
  double scores = 0.0, pv = 0.0, mean_norm = 0.0;
  // The float sums of P·V and of P in key order: each partial sum is rounded once (recursive
  // summation, the longest chain an implementation can have; split and tiled sums round less).
  double partial_pv = 0.0, partial_p = 0.0, weight = 0.0;
  std::vector<double> sum(static_cast<size_t>(dv), 0.0);
  for (int32_t t = 0; t < n; ++t) {
    p[t] /= denom;
    const float* v = row(in.v, in.stride, t);
    double r2 = 0.0, v2 = 0.0, s2 = 0.0;
    for (int32_t d = 0; d < dv; ++d) {
      r2 += sq(v[d] - out[d]);
      v2 += sq(v[d]);
      sum[d] += p[t] * v[d];
      s2 += sq(sum[d]);
    }
    weight += p[t];
    partial_pv += s2;
    partial_p += sq(weight);
    rt[t] = std::sqrt(r2);
    scores += sq(p[t]) * r2 *
              ((sq(r.u_kv) + dk * sq(r.u_acc)) * a[t] +
               sq(r.u_acc) * (1.0 + sq(s[t]) + sq(s[t] - m)));
    pv += sq(p[t]) * v2;
    mean_norm += p[t] * std::sqrt(v2);
    if (q_rounds) {
      const float* k = row(in.k, in.stride, t);
      double ds = 0.0;
      for (int32_t i = 0; i < dk; ++i) ds += dq[i] * k[i];
      ds *= in.scale * p[t];
      for (int32_t d = 0; d < dv; ++d) dout[d] += ds * (v[d] - out[d]);
    }
  }
  double qterm = 0.0;
  for (int32_t d = 0; d < dv; ++d) qterm += sq(dout[d]);
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
    double acc = 0.0;
    for (int32_t i = 0; i < in.dv; ++i) {
      acc += static_cast<double>(wr[i]) * lat[i];
      wf2 += sq(wr[i]);
    }
    out[d] = acc;
    o2 += sq(acc);
  }
  // Through w: a random projection scales an error's norm by ‖w‖_F / sqrt(dv); w's own float sum
  // adds sqrt(dv) roundings of the output's size.
  return std::sqrt(sq(e_lat) * wf2 / in.dv + in.dv * sq(r.u_acc) * o2);
}

}  // namespace kv
