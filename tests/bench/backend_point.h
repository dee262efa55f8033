// backend_point.h — one grid point of kvbench_backend_decode: the built-in CUDA decode and a
// plugin's paged_decode on the same inputs, checked against each other and timed alike
// (backend_point.cpp says in what order).
#pragma once

#include "tests/bench/backend_decode.h"
#include "tests/bench/plugin_decoder.h"

namespace kv::bench {

// Never throws for a failure of the point: it is in the result's status (failed set), and the
// next point can run. A sticky CUDA error (a faulting kernel) shows at the caller's next sync.
BackendPoint run_backend_point(const DecodeShape& s, PluginDecoder& plugin,
                               const BackendRunOptions& opt);

}  // namespace kv::bench
