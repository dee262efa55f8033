// row_compare.h — one output row against the expected row, as the GPU tests and the decode
// benchmark's --check mode compare them: element classes must agree (unwritten poison, NaN, ±Inf),
// then the finite elements must be within a relative L2 tolerance.
//
// Used by tests/gpu/gpu_test_support.h (close_rows, and same_class for the element-wise checks)
// and tests/bench/decode_check.cu (compare_vec). Plain C++ with no gtest and no CUDA, so that
// kvbench_decode still builds with nvcc alone (scripts/bench-decode.sh). Included as
// "tests/support/row_compare.h": both builds put the repository root on the include path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

#include "tests/kernels/kernel_test_support.h"  // is_poison, f32_bits

namespace kv::test {

// x as "%.9g (0x%08x)": the bits tell a NaN payload (poison or canonical) and -0 apart.
inline std::string show(float x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g (0x%08x)", static_cast<double>(x), f32_bits(x));
  return b;
}

// Whether expected `h` (the host op) and `c` (the CUDA op) are of one class: both poison (neither
// side wrote it), both NaN (payloads may differ: GPU arithmetic returns the canonical NaN), the
// same ±Inf, or both finite. Otherwise false, with the reason in `why`.
inline bool same_class(float h, float c, std::string& why) {
  const bool hp = is_poison(h), cp = is_poison(c);
  if (hp || cp) {
    if (hp == cp) return true;
    why = hp ? "host left it unwritten (poison), cuda wrote " + show(c)
             : "cuda left it unwritten (poison), host wrote " + show(h);
    return false;
  }
  if (std::isnan(h) || std::isnan(c)) {
    if (std::isnan(h) && std::isnan(c)) return true;
    why = "NaN on one side only: host " + show(h) + ", cuda " + show(c);
    return false;
  }
  if (std::isinf(h) || std::isinf(c)) {
    if (h == c) return true;
    why = "Inf on one side only (or opposite signs): host " + show(h) + ", cuda " + show(c);
    return false;
  }
  return true;
}

// The outcome of compare_row. `ok` is false either for an element whose class differs
// (bad_element, why) or for a relative L2 error above the tolerance (err).
struct RowCheck {
  static constexpr size_t kNoElement = static_cast<size_t>(-1);
  bool ok = false;
  size_t bad_element = kNoElement;  // first element whose class differs from the expected one
  std::string why;                  // why that element differs
  double err = 0.0;                 // relative L2 error, when every class agrees
};

// Compares `got` with `expected` (n elements): classes element by element (same_class), then
//   err = ||got - expected|| / max(||expected||, floor)
// over the elements where `expected` is finite. `floor` keeps an all-but-zero expected row from
// turning rounding noise into a large ratio; with floor 0, an all-zero expected row gives the
// absolute error ||got - expected||. ok is err <= tol, never !(err > tol): a NaN error compares
// false either way, so written this way it fails.
inline RowCheck compare_row(const float* expected, const float* got, size_t n, double tol,
                            double floor) {
  RowCheck r;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float h = expected[i], c = got[i];
    if (!same_class(h, c, r.why)) {
      r.bad_element = i;
      return r;
    }
    if (!std::isfinite(h)) continue;  // NaN (poison included) or Inf on both sides
    const double d = static_cast<double>(c) - h;
    num += d * d;
    den += static_cast<double>(h) * h;
  }
  const double norm = std::max(std::sqrt(den), floor);
  r.err = norm > 0.0 ? std::sqrt(num) / norm : std::sqrt(num);
  r.ok = r.err <= tol;
  return r;
}

}  // namespace kv::test
