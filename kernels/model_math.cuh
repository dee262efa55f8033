// model_math.cuh — math of the synthetic model shared by the ops (float, host and CUDA) and the
// float64 reference (double): one formula, instantiated at two precisions, so the reference
// differs from the ops only by rounding, never by definition.
#pragma once

#include <cmath>

#include "hd.cuh"

namespace kv {

// Sinusoidal position code of feature `i` (0 <= i < hidden) at position `pos`:
//   j = i / 2, freq = 10000^(-2j / hidden); even i -> sin(pos * freq), odd i -> cos(pos * freq).
// The angle pos * freq is formed in T, so at float precision its absolute error grows with pos
// (about pos * 6e-8 radians); the reference's tolerance has to allow for that at long positions.
template <class T>
KV_HD T position_code(int pos, int i, int hidden) {
  const int j = i / 2;
  const T freq = std::pow(T(10000), T(-2 * j) / T(hidden));
  const T angle = T(pos) * freq;
  return (i % 2 == 0) ? std::sin(angle) : std::cos(angle);
}

}  // namespace kv
