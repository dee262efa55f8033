// ref_sums.h — the float64 sums of the host reference and the op reference, in kLanes independent
// partial sums added at the end. One float64 chain waits on each add's latency (the compiler may
// not reorder float adds without leave to change the result); four chains keep the adder busy
// and let it pair them in vector registers. The result differs from the sequential sum by a few
// float64 ulps, far below anything the checks measure (their errors are float32's and coarser).
#pragma once

#include <cstddef>

namespace kv::ref {

inline constexpr size_t kLanes = 4;

inline double lanes_total(const double (&acc)[kLanes]) {
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// Σ_i a_i b_i.
template <typename A, typename B>
double dot(const A* a, const B* b, size_t n) {
  double acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j)
      acc[j] += static_cast<double>(a[i + j]) * static_cast<double>(b[i + j]);
  for (; i < n; ++i) acc[0] += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return lanes_total(acc);
}

// Σ_i a_i b_i into *sum and Σ_i (a_i b_i)² into *squares, in one pass.
template <typename A, typename B>
void dot_and_squares(const A* a, const B* b, size_t n, double* sum, double* squares) {
  double acc[kLanes] = {}, acc2[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const double x = static_cast<double>(a[i + j]) * static_cast<double>(b[i + j]);
      acc[j] += x;
      acc2[j] += x * x;
    }
  for (; i < n; ++i) {
    const double x = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    acc[0] += x;
    acc2[0] += x * x;
  }
  *sum = lanes_total(acc);
  *squares = lanes_total(acc2);
}

// Σ_i x_i².
template <typename T>
double squares(const T* x, size_t n) {
  return dot(x, x, n);
}

// out += p v over n elements; returns Σ_i v_i² (one pass over v for both).
template <typename T>
double add_scaled_row(double p, const T* v, size_t n, double* out) {
  double acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const double x = static_cast<double>(v[i + j]);
      acc[j] += x * x;
      out[i + j] += p * x;
    }
  for (; i < n; ++i) {
    const double x = static_cast<double>(v[i]);
    acc[0] += x * x;
    out[i] += p * x;
  }
  return lanes_total(acc);
}

}  // namespace kv::ref
