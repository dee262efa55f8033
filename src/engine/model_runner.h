// model_runner.h — runs the synthetic model on a Device, one step at a time.
//
// The constructor reads as the boot order: upload the weights, allocate the persistent buffers
// and the caches (separate or hybrid pool, cache_layout.h), capture one CUDA graph per capture
// size. forward() then either launches the step's ops (eager) or copies the step's metadata into
// the persistent buffers the graph was captured with and replays it, exactly as a CUDA-graph
// runner does: a replay reads whatever sits at the captured addresses.
//
// Per layer kind (model_weights.h has the math):
//   attention: q/k/v projections, write_kv, paged decode | gather + context attention + causal
//              attention + merge, then the batch-wide fp8 op and o_proj;
//   mla:       absorbed query and latent projections, write_kv of the latent, the same decode /
//              prefill ops over the one-head latent cache (V = the first kv_lora_rank features),
//              the per-head up-projection, then the fp8 op and o_proj;
//   linear:    q/k/v/gate projections, linear_attention over the state blocks, o_proj.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "device/device.h"
#include "device/device_buffer.h"
#include "engine/cache_layout.h"
#include "engine/graph_inputs.h"
#include "model/model_weights.h"
#include "engine/step_plan.h"
#include "scenario/scenario.h"

namespace kv {

// What the checks read back after a step, for the real rows only.
struct StepOutputs {
  std::vector<std::vector<float>> attn_out;   // per layer [num_rows][q_dim]: the mixer's output
  std::vector<std::vector<float>> quant_out;  // per layer [num_rows][q_dim] after the fp8 op;
                                              // empty for linear layers (they have none)
  std::vector<int32_t> sampled;               // [num_rows] argmax per row (-1: NaN logits)
  // Per layer [num_rows][q width]: the q rows the layer's attention op read (attention: q_dim,
  // mla: num_q_heads * (kv_lora_rank + qk_rope_dim)), for the op checks; empty for linear
  // layers and when checks.op_drift is off.
  std::vector<std::vector<float>> q;
};

// K/V rows of one request's positions [from, to) as one layer's cache stores them, read back as
// the ops read them (dequantised: value times scale). Rows are kv_heads * head_dim wide (mla: the
// latent row, K only; V is its first kv_lora_rank features).
struct KvRows {
  int32_t from = 0, to = 0;
  std::vector<float> k, v;
};

// Wall time of the steps run so far (device synchronised), and of the seed-001 mitigation's
// memsets timed on their own right before each step that has them.
struct RunnerTiming {
  int64_t steps = 0;
  double forward_seconds = 0.0;
  double zero_init_seconds = 0.0;
};

// The fill an injected fault writes.
FillPattern to_fill(PoisonPattern p);

class ModelRunner {
 public:
  // The scenario's regressions are the ones the runner's ops model.
  ModelRunner(const Scenario& s, const ModelWeights& w, Device& dev, const PlanLimits& limits);

  void forward(const StepPlan& p);
  StepOutputs read_outputs(const StepPlan& p) const;
  // Positions [from, to) of a request whose block table row is `block_table` (StepPlan::
  // chunk_block_table), in paged layer `layer`. One download per block touched.
  KvRows read_kv_rows(size_t layer, const int32_t* block_table, int32_t from, int32_t to) const;

  // zero_blocks / poison_blocks on the views of the layers whose kind `kinds` lists.
  void fill_blocks(const std::vector<int32_t>& ids, FillPattern pattern,
                   const std::vector<LayerKind>& kinds, uint64_t seed);
  int32_t graphs_captured() const { return static_cast<int32_t>(graphs_.size()); }
  const RunnerTiming& timing() const { return timing_; }

 private:
  struct LayerBuffers {
    LayerKind kind = LayerKind::attention;
    DeviceBuffer wq, wk, wv, bias, wo, wg, wuv;  // per kind, see upload_weights
    PagedKv kv;                 // attention / mla view of the cache
    float* state = nullptr;     // linear: element 0 of block 0 of the state view
    int64_t state_stride = 0;   // linear: floats between blocks
    PagedKv fill_view;          // what zero/poison blocks fill for this layer
    DeviceBuffer attn_out;      // [rows][q_dim]: the checked output
    DeviceBuffer quant;         // [rows][q_dim]: after the batch-wide fp8 op (not linear)
    DeviceBuffer q;             // paged layers with op checks: [rows][q width], this layer's q
  };

  void upload_weights(const ModelWeights& w);
  void allocate_buffers();
  void capture_graphs();
  // Where a step's decode reads its plan, per paged layer kind: attention layers and mla layers
  // each have their own plan (their shapes differ: a backend's plan depends on them).
  struct DecodePlans {
    const int32_t* attention = nullptr;
    const int32_t* mla = nullptr;
  };
  // Runs the decode plan step once per paged layer kind of the model; returns where this step's
  // decodes read their plans (the seed-003 switch, in one place).
  DecodePlans plan_decode(const StepPlan& p, std::vector<DeviceBuffer>& keep);
  // The run's decode steps of one paged layer kind as a plan's args (num_rows: the most rows;
  // v_dim > 0 replaces the kind's), for sizing and, with the step's lens, for planning.
  DecodePlanArgs decode_shape(bool mla, int32_t v_dim = 0) const;
  void poison_outputs(const StepPlan& p);
  void zero_init_outputs(int32_t rows);
  void ensure_context_capacity(int32_t tokens);
  // The step's ops in order; recorded instead of run while a graph is being captured.
  void launch(const StepPlan& p, const DecodePlans& plans);
  // out[rows][out_dim] = x_ W^T (+ bias): a projection of the normed hidden states.
  void project(int32_t rows, const float* w, const float* bias, float* out, int32_t out_dim);
  void launch_attention(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev);
  void launch_mla(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev);
  void launch_linear(const StepPlan& p, LayerBuffers& L);
  void launch_quant_and_oproj(int32_t rows, LayerBuffers& L);
  // Decode and prefill-with-context over one paged cache: the ops attention and mla share.
  // q rows are q_width wide; the output of a head is v_dim wide, rows written at `out`.
  struct MixerShape {
    int32_t q_width, kv_width, num_kv_heads, head_dim, v_dim;
    float scale;
  };
  void paged_attention(const StepPlan& p, const PagedKv& kv, const MixerShape& m,
                       const int32_t* meta_dev, const float* q, const float* k_new,
                       const float* v_new, float* out);
  // Where a paged layer's q goes: its own buffer when the op checks read it back, else q_.
  float* layer_q(LayerBuffers& L) { return L.q.bytes() ? L.q.as<float>() : q_.as<float>(); }
  int32_t q_width(const LayerBuffers& L) const;
  float* mixer_out(LayerBuffers& L);  // what the attention op writes (mla: the latent output)
  size_t mixer_width(const LayerBuffers& L) const;  // floats per row of mixer_out

  const Scenario& s_;
  Device& dev_;
  PlanLimits limits_;
  int32_t max_rows_, q_dim_, hidden_;
  int32_t latent_dim_;     // mla: kv_lora_rank + qk_rope_dim
  int32_t q_width_max_, kv_width_max_, head_out_max_;  // workspace widths over the layer kinds
  float softmax_scale_, mla_softmax_scale_;

  DeviceBuffer embed_, lm_head_;
  CacheLayoutPlan cache_plan_;
  std::vector<DeviceBuffer> caches_;
  std::vector<LayerBuffers> layers_;
  GraphInputs inputs_;        // persistent: graphs hold their addresses
  // Persistent, one per paged layer kind the model has: the plan step writes it, the decode
  // reads it.
  DeviceBuffer attention_plan_, mla_plan_;
  size_t plan_bytes_ = 0;
  // Activations and workspaces.
  DeviceBuffer h_, x_, q_, k_, v_, gate_, latent_out_;
  DeviceBuffer ctx_out_, ctx_lse_, new_out_, new_lse_, decode_workspace_;
  size_t partial_lse_offset_ = 0;  // floats into decode_workspace_
  DeviceBuffer ctx_k_, ctx_v_;
  int32_t ctx_capacity_ = 0;
  DeviceBuffer logits_, sampled_;
  std::map<int32_t, GraphId> graphs_;  // capture size -> graph
  std::vector<DeviceBuffer> graph_metadata_;  // seed-003 bug: fresh plans the graphs captured
  RunnerTiming timing_;
};

}  // namespace kv
