// cost_text.h — a scenario's estimated cost (check/run_cost.h) as `kvcheck validate` prints it:
//
//     estimated memory: about 17.2 MiB (on the device 4.6 MiB, on the host 12.6 MiB)
//       device  KV cache         1.0 MiB  cache.num_blocks, cache.block_size, model.layers
//       ...
//     estimated work: 2 epoch(s) x about 820 token positions in about 60 steps; reference ...
//
// "device" is where the ops run: host memory too with --device host.
#pragma once

#include <ostream>

#include "check/run_cost.h"

namespace kv {

void print_run_cost(std::ostream& out, const RunCost& cost, const char* indent = "  ");

}  // namespace kv
