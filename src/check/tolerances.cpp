// tolerances.cpp — the calibrated drift tolerances (tolerances.h), per cache dtype, check site
// and op precision. Provisional: every drift site at the dtype's former single default until the
// calibration (scripts/calibrate-oracle.py, results/oracle-calibration.md) fills in the table.
#include "check/tolerances.h"

#include <algorithm>

namespace kv {
namespace {

double dtype_default(DType cache_dtype) {
  switch (cache_dtype) {
    case DType::f32: return 1e-2;
    case DType::f16: return 4e-2;
    case DType::bf16: return 4e-2;
    case DType::fp8_e4m3: return 6e-2;
  }
  return 4e-2;
}

}  // namespace

SiteTolerances default_tolerances(DType cache_dtype, OpPrecision) {
  SiteTolerances t{};
  for (size_t i = 0; i < kNumCheckSites; ++i)
    if (has_drift_check(static_cast<CheckSite>(i))) t[i] = dtype_default(cache_dtype);
  return t;
}

SiteTolerances drift_tolerances(const Scenario& s, OpPrecision precision) {
  SiteTolerances t = default_tolerances(s.cache.dtype, precision);
  if (s.checks.tolerance)
    for (size_t i = 0; i < kNumCheckSites; ++i)
      if (has_drift_check(static_cast<CheckSite>(i))) t[i] = *s.checks.tolerance;
  return t;
}

double largest_tolerance(const SiteTolerances& t) {
  return *std::max_element(t.begin(), t.end());
}

}  // namespace kv
