// op_checker.h — judges each attention-like op on its own inputs.
//
// Besides the end-to-end comparison (checker.h), every attention and MLA op output row of every
// layer is compared with the float64 value of that op over the inputs the engine actually gave it
// — the step's q rows (StepOutputs::q) and the K/V rows as the cache stored them (op_inputs.h) —
// so no upstream rounding is charged to it. The error allowed is a bound from the op's arithmetic
// (reference/host/op_reference.h; docs/oracle.md): the precisions it rounds in (OpRounding, per
// device and cache dtype: op_rounding in tolerances.h), the number of keys, the head dims and the
// softmax's weights, times a measured safety factor. Linear-attention layers are judged end to end
// only (their recurrent state is not an input the engine hands over).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "check/checked_step.h"
#include "model/model_weights.h"
#include "check/tolerances.h"
#include "reference/host/op_reference.h"
#include "scenario/scenario.h"

namespace kv {

// One head of one op output row: the L2 error against the op's float64 value, the bound it is
// judged with (safety factor included) and the value's norm (for relative figures); and, where
// the end-to-end reference row was given, the relative L2 distance between the op's float64
// value and it (the denominator floored as the end-to-end check floors it): the part of the
// end-to-end error the op's inputs brought with them, upstream rounding compounded; -1 without.
struct OpRowError {
  double error = 0.0, bound = 0.0, norm = 0.0;
  double input_error = -1.0;
};

class OpChecker {
 public:
  // roundings: what the ops round in at each site (tolerances.h, op_roundings).
  OpChecker(const Scenario& s, const ModelWeights& w, const OpRoundings& roundings, double safety);

  void begin_epoch();
  // Adds a step's K/V rows to its requests' histories; steps come in order.
  void add(const CheckedStep& step);
  // Per chunk of the step: whether its rows are judged (a checked chunk whose op inputs are all
  // known, ChunkKv::unwritten_rows); and per layer: whether it is (a paged layer).
  std::vector<uint8_t> judged_chunks(const CheckedStep& step) const;
  bool judges_layer(const CheckedStep& step, size_t layer) const;
  // Per head of the row at `position` of chunk `chunk` in `layer`: its error and bound; with
  // `reference` (the end-to-end reference's row of that token and layer, every head) also the
  // input error, relative to max(‖reference head‖, floor). The step must have been add()ed.
  // Safe to call from several threads at once.
  void measure(const CheckedStep& step, size_t chunk, int32_t position, size_t layer,
               OpRowError* heads, const double* reference = nullptr, double floor = 0.0) const;
  void release(int32_t request) { history_.erase(request); }
  const OpRounding& rounding(CheckSite site) const { return roundings_[static_cast<size_t>(site)]; }
  double safety() const { return safety_; }

 private:
  struct History {  // one layer of one request: rows [position][width]
    std::vector<float> k, v;
  };
  const Scenario& s_;
  const ModelWeights& w_;
  OpRoundings roundings_;
  double safety_;
  std::map<int32_t, std::vector<History>> history_;  // per request, per layer
};

}  // namespace kv
