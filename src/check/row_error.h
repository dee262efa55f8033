// row_error.h — the relative L2 error of one head's row against a float64 value, as the
// end-to-end check (checker.cpp) and the op checks' input error (op_checker.cpp) both take it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kv {

// ‖out − ref‖ / max(‖ref‖, floor). The floor is kRowNormFloor times the RMS head norm of the
// token's whole output: a linear-attention head reads q·S, which can nearly cancel, so one head's
// row can be 20x smaller than its neighbours while carrying the same absolute rounding noise;
// attention and mla rows are convex combinations of V rows and sit far above the floor.
template <typename T>
double rel_l2(const T* out, const double* ref, int32_t n, double floor) {
  double num = 0.0, den = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max({std::sqrt(den), floor, 1e-30});
}

}  // namespace kv
