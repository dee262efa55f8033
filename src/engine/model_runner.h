// model_runner.h — runs the synthetic model on a Device, one step at a time.
//
// The constructor reads as the boot order: upload the weights, allocate the persistent buffers
// and the KV cache, capture one CUDA graph per capture size. forward() then either launches the
// step's ops (eager) or copies the step's metadata into the persistent buffers the graph was
// captured with and replays it, exactly as a CUDA-graph runner does: a replay reads whatever sits
// at the captured addresses.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "device/device.h"
#include "device/device_buffer.h"
#include "engine/model_weights.h"
#include "scenario/regressions.h"
#include "engine/step_plan.h"
#include "scenario/scenario.h"

namespace kv {

// What the checks read back after a step, for the real rows only.
struct StepOutputs {
  std::vector<std::vector<float>> attn_out;   // per layer [num_rows][q_dim]: attention outputs
  std::vector<std::vector<float>> quant_out;  // per layer [num_rows][q_dim]: after the fp8 op
  std::vector<int32_t> sampled;               // [num_rows] argmax per row (-1: NaN logits)
};

// The fill an injected fault writes.
FillPattern to_fill(PoisonPattern p);

class ModelRunner {
 public:
  ModelRunner(const Scenario& s, const ModelWeights& w, Device& dev, const RegressionSet& reg,
              const PlanLimits& limits);

  void forward(const StepPlan& p);
  StepOutputs read_outputs(const StepPlan& p) const;

  // zero_blocks / poison_blocks on the caches of the layers that `kinds` selects.
  void fill_blocks(const std::vector<int32_t>& ids, FillPattern pattern,
                   const std::vector<LayerKind>& kinds, uint64_t seed);
  int32_t graphs_captured() const { return static_cast<int32_t>(graphs_.size()); }

 private:
  struct LayerBuffers {
    DeviceBuffer wq, wk, wv, bv, wo;
    DeviceBuffer cache;
    PagedKv kv;
    DeviceBuffer attn_out;  // attention output, read by the checks
    DeviceBuffer quant;     // after the batch-wide fp8 op: the o_proj input
  };

  void upload_weights(const ModelWeights& w);
  void allocate_buffers();
  void capture_graphs();
  void upload_inputs(const StepPlan& p, const int32_t* meta_dev);
  void poison_outputs(const StepPlan& p);
  void ensure_context_capacity(int32_t tokens);
  // The step's ops in order; recorded instead of run while a graph is being captured.
  void launch(const StepPlan& p, const int32_t* meta_dev);
  void launch_attention(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev);
  // Prefill attention over contiguous K/V: the fields shared by the context and causal calls.
  VarlenAttnArgs varlen_args(size_t q_off, const float* k, const float* v, bool causal) const;

  const Scenario& s_;
  Device& dev_;
  RegressionSet reg_;
  PlanLimits limits_;
  int32_t max_rows_, q_dim_, kv_dim_, hidden_;
  float softmax_scale_;

  DeviceBuffer embed_, lm_head_;
  std::vector<LayerBuffers> layers_;
  // Persistent inputs (graphs hold their addresses).
  DeviceBuffer tokens_, positions_, slots_, num_real_rows_;
  DeviceBuffer decode_table_, decode_seq_lens_, decode_meta_;
  DeviceBuffer prefill_q_starts_, context_table_, context_lens_, context_starts_;
  // Activations and workspaces.
  DeviceBuffer h_, x_, q_, k_, v_;
  DeviceBuffer ctx_out_, ctx_lse_, new_out_, new_lse_, partial_out_, partial_lse_;
  DeviceBuffer ctx_k_, ctx_v_;
  int32_t ctx_capacity_ = 0;
  DeviceBuffer logits_, sampled_;
  std::map<int32_t, GraphId> graphs_;  // capture size -> graph
  std::vector<DeviceBuffer> graph_metadata_;  // fresh-per-step metadata held by graphs (regression)
};

}  // namespace kv
