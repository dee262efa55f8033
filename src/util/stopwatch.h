// stopwatch.h — wall time in seconds on the steady clock: what the engine, the checks, the GPU
// reference and the CLI report as their *_seconds (forward, reference, check, epoch, run).
#pragma once

#include <chrono>

namespace kv {

using SteadyTime = std::chrono::steady_clock::time_point;

inline double seconds_between(SteadyTime from, SteadyTime to) {
  return std::chrono::duration<double>(to - from).count();
}

inline double seconds_since(SteadyTime from) {
  return seconds_between(from, std::chrono::steady_clock::now());
}

}  // namespace kv
