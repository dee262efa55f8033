// op_inputs.h — what the op checks read beside a step's outputs: the K/V rows each checked chunk's
// op read, as the cache stored them right after the step.
//
// The op check (op_checker.h) computes an attention op in float64 from the inputs the engine gave
// it: the q rows come with the outputs (StepOutputs::q), the K/V rows are read here, on the
// engine's thread, before the next step can reuse a freed block. Each position is read once per
// epoch, right after the step that wrote it; a request whose chunk starts past what was read of
// it (a prefix-cache hit: blocks another request wrote) has those positions read too.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model_runner.h"
#include "engine/step_plan.h"
#include "scenario/scenario.h"

namespace kv {

// One chunk's new K/V rows: per layer (empty rows for a linear layer).
struct ChunkKv {
  size_t chunk = 0;  // index into the plan's chunks
  std::vector<KvRows> layers;
  // Some of the chunk's rows were recomputed and not written (a hybrid request's prefix-hit
  // blocks, slot -1): the chunk's op read those keys from the projections, not from the cache,
  // so its inputs are not all known here and its rows are judged end to end only.
  bool unwritten_rows = false;
};

class OpInputsReader {
 public:
  OpInputsReader(const Scenario& s, const ModelRunner& runner);
  void begin_epoch(int32_t num_requests);
  // The rows of every chunk whose request `checked` names: [start, end), from the first position
  // not yet read where that is before start.
  std::vector<ChunkKv> read(const StepPlan& plan, const std::function<bool(int32_t)>& checked);

 private:
  const Scenario& s_;
  const ModelRunner& runner_;
  std::vector<int32_t> read_upto_;  // per request: positions [0, read_upto) read this epoch
};

}  // namespace kv
