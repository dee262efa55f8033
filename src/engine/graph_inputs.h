// graph_inputs.h — the step's metadata on the device, at addresses fixed for the runner's life.
//
// A captured CUDA graph holds the addresses of its inputs, so every step, eager or replayed,
// uploads its StepPlan into these same buffers (nano-vllm's persistent max-size graph inputs).
// Each buffer is sized for the largest step (max_rows rows, block tables of the plan's stride).
#pragma once

#include <cstdint>

#include "device/device_buffer.h"
#include "engine/step_plan.h"

namespace kv {

struct GraphInputs {
  DeviceBuffer tokens, positions, slots, num_real_rows;
  DeviceBuffer decode_table, decode_seq_lens;
  DeviceBuffer prefill_q_starts, context_starts;
  // Every prefill sequence, context ones first: the fused prefill reads all, the gather the first.
  DeviceBuffer prefill_ctx_lens, prefill_table;
  DeviceBuffer linear_starts, linear_blocks, linear_has_state;

  GraphInputs() = default;
  GraphInputs(Device& dev, int32_t max_rows, int32_t block_table_stride);
  // Every buffer from the plan's field of the same meaning.
  void upload(const StepPlan& p) const;
};

}  // namespace kv
