// pass_timer.h — the one timing rule of kvbench_backend_decode, so that the built-in decode and
// the plugin's are measured alike: a "pass" enqueues one decode of every input set on a stream;
// it is captured into a CUDA graph (relaxed capture, as the engine captures decode steps) and
// replayed, or launched eagerly; after one eager pass (outside any capture) and two warm-up
// passes, samples of R passes each are timed with CUDA events (R: enough passes for
// min_sample_ms), and the median sample over the decodes it holds is the time of one decode.
// Defined in pass_timer.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "tests/bench/backend_decode.h"

namespace kv::bench {

// Enqueues one pass on the stream; returns "" or why it failed (a plugin's message).
using Pass = std::function<std::string(cudaStream_t)>;

struct PassTime {
  double us = 0.0;    // median per decode
  std::string error;  // non-empty: not timed, and why
};

PassTime time_pass(const Pass& pass, int decodes_per_pass, TimingMode mode,
                   const BackendRunOptions& opt);

}  // namespace kv::bench
