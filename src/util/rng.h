// rng.h — portable random draws. std::*_distribution differ between standard libraries; these
// are defined here bit for bit so a seed means the same workload and weights everywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace kv {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(splitmix64(seed ^ 0x6b76636865636bull)) {}
  uint64_t next() { return state_ = splitmix64(state_); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Uniform integer in [lo, hi] without modulo bias.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(next());
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t r;
    do r = next(); while (r >= limit);
    return lo + static_cast<int64_t>(r % span);
  }
  double normal() {  // Box-Muller, one draw per call
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace kv
