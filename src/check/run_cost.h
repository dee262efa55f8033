// run_cost.h — what running a scenario will cost, known before anything is allocated: the memory
// of the engine (weights, KV cache, step workspaces and graph inputs), of the float64 reference,
// the checker and the workload, and the work (token positions, steps, reference position pairs).
//
// Memory is an estimate of the peak, item by item, each naming the fields that size it, so that a
// refusal can say what to lower. "On the device" items live where the ops run: host memory with
// --device host, GPU memory with --device cuda. Sums over many requests use the mean of each
// drawn range; what one request or one step holds at most uses the range's maximum. Compared with
// the measured peak RSS in results/run-cost.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

struct MemoryItem {
  std::string what;         // "KV cache", "step workspaces", ...
  int64_t bytes = 0;
  bool on_device = false;   // where the ops run; else always host memory
  std::string fields;       // the fields to lower to shrink it: "cache.num_blocks, ..."
};

struct RunCost {
  std::vector<MemoryItem> memory;  // in the order the run allocates them
  int32_t epochs = 1;
  int64_t tokens_per_epoch = 0;    // token positions the engine computes (no preemption)
  int64_t steps_per_epoch = 0;     // about: steps that run (idle steps are skipped)
  int64_t checked_requests = 0;    // per epoch, against the reference
  // Per epoch: (query, key) position pairs the reference's attention and mla layers compute,
  // summed over those layers: its O(length^2) part.
  int64_t reference_pairs = 0;
  // References extended at once at most, one checker job each (reference/host/host_reference.cpp): the
  // checked requests that can run at once. Each job beyond the first may get a thread of its own.
  int64_t references_at_once = 1;
  // The run's arithmetic, in multiply-adds over all epochs, roughly: the engine's projections
  // (token positions x layers x hidden_size x the layer's width) and the attention pairs, once in
  // the engine and once in the float64 reference, at the model's widths. Only to compare
  // scenarios with one another: ordering, and balancing `kvcheck run --shard`.
  double work = 0;

  int64_t device_bytes() const;  // the on_device items
  int64_t host_bytes() const;    // the rest: host memory on any device
  int64_t total_bytes() const { return device_bytes() + host_bytes(); }
};

// The scenario must be valid (parse_scenario succeeded), with overrides applied.
RunCost estimate_run_cost(const Scenario& s);

}  // namespace kv
