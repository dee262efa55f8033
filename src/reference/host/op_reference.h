// op_reference.h — one attention-like op in float64 from the inputs the engine gave it, and the
// error an implementation of that op may make in a given precision.
//
// The end-to-end reference (ref_sequence.h) recomputes the whole model from the tokens, so every
// upstream rounding reaches an op's inputs and is charged to it. Here the op's own inputs are
// used as they were — the engine's q rows and the K/V rows as the cache stores them — so what
// remains between the engine's output and this value is the op's arithmetic alone, and it has a
// bound that follows from the shape and the precisions (docs/oracle.md derives it):
//
//   E² = ‖Σ_t p_t τ (q̃ − q)·k_t (v_t − o)‖²                      q rounded to q̃ (exactly)
//      + Σ_t p_t² ρ_t² [(u_kv² + d u_acc²) a_t + u_acc² (1 + s_t² + (s_t − m)²)]   scores, exp
//      + (u_p² + u_kv²) Σ_t p_t² ‖v_t‖²                          P and V rounded
//      + u_acc² Σ_t (‖S_t‖² + ‖o‖² L_t²)                          P·V and Σ P summed in float
//      + ‖õ − o‖² + (k − 1) u_out² (Σ_t p_t ‖v_t‖)² + u_acc² ‖o‖²  output rounded to õ, k times
//
// with s_t = τ q·k_t, p = softmax(s), m = max s, o = Σ p_t v_t, ρ_t² = ‖v_t‖² + ‖o‖² (for
// ‖v_t − o‖², which needs o before the pass over V),
// a_t = τ² Σ_i q_i² k_ti², S_t = Σ_{u≤t} p_u v_u and L_t = Σ_{u≤t} p_u (the partial sums each
// rounded once), n keys, d = head dim. q̃ and õ are q and o rounded to nearest in the
// precision of u_q and u_out: those two roundings are deterministic, so their effect is computed,
// not estimated. E estimates the L2 norm of the error of one
// head's output row when every rounding is an independent relative error of its unit roundoff
// (the probabilistic model of rounding error analysis: errors add in quadrature). The check
// allows a measured safety factor times E (check/tolerances.h, kOpBoundSafety).
#pragma once

#include <cstdint>

namespace kv {

// Unit roundoffs of what an implementation rounds (0: kept exact): q as the op reads it, K and V
// as it reads them from the cache (0 where it reads the stored values exactly), the softmax
// weights P before they multiply V, and its output; and its float accumulation. out_roundings:
// how many times an output row is rounded on its way (partial outputs merged: 2).
struct OpRounding {
  double u_q = 0.0, u_kv = 0.0, u_p = 0.0, u_out = 0.0;
  double u_acc = 0x1p-24;
  int32_t out_roundings = 1;
};

// Unit roundoff of a 16-bit float: bf16 keeps 8 significant bits, f16 11.
inline constexpr double kUnitRoundoffBf16 = 0x1p-8;
inline constexpr double kUnitRoundoffF16 = 0x1p-11;
inline constexpr double kUnitRoundoffF32 = 0x1p-24;
// A float split into bf16 hi + lo halves for 16-bit tensor cores: about 16 significant bits.
inline constexpr double kUnitRoundoffBf16x2 = 0x1p-16;

// One head's rows: the q row (dk values), n key rows and n value rows, each row `stride` floats
// after the previous (head offset already applied), value rows dv wide.
struct OpHeadInputs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t stride = 0;
  int32_t n = 0, dk = 0, dv = 0;
  double scale = 1.0;
};

// out[0, dv) = softmax(scale q·K) V in double; returns E, the estimate above (absolute, L2).
double attend_op(const OpHeadInputs& in, const OpRounding& r, double* out);

// The same through a per-head up-projection w [dout][dv] (MLA's Wuv_h over the latent output):
// out[0, dout) = w · attention; E carried through w as a random projection carries an error
// (‖w‖_F / sqrt(dv) per unit), plus w's own float accumulation.
double attend_op_projected(const OpHeadInputs& in, const OpRounding& r, const float* w,
                           int32_t dout, double* out);

}  // namespace kv
