// cuda_layout.h — how the GPU reference (reference/cuda/) lays out its device memory, and how
// much of it a scenario needs. Plain host code, shared by the CUDA reference and the CLI's check
// that it fits (reference/reference_choice.h), so the estimate is the allocation, not a guess.
//
// One block of device memory per checked request ("slot"), sized for the request's capacity
// (prompt + max_new_tokens positions), holding what ref_layers.h holds on the host:
//   attention: a = K, b = V        float [capacity][num_kv_heads * head_dim] (cache-rounded)
//   mla:       a = latent          float [capacity][kv_lora_rank + qk_rope_dim] (cache-rounded)
//              b = Wuk_h c_t, c = Wuv_h c_t   double [capacity][num_q_heads * head_dim]
//   linear:    a = state           double [num_q_heads][head_dim][head_dim]
//   out:    double [capacity][layers][num_q_heads * head_dim]   (attention outputs)
//   hidden: double [capacity][hidden_size]                      (after the last layer)
//   ties:   uint64 [capacity][layers]  (which engine codes the fp8 op adopted: refgpu::quantise)
//   snapshots: [kRefStateSnapshots][every linear layer's state, in layer order] (models with
//              linear layers: their states at a few earlier positions, for a later epoch)
// Every part starts at a multiple of 256 bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

struct RefLayerOffsets {
  int64_t a = 0, b = 0, c = 0;  // byte offsets within the slot; unused parts 0
};

struct RefSlotLayout {
  int32_t capacity = 0;
  std::vector<RefLayerOffsets> layers;
  int64_t out = 0;
  int64_t hidden = 0;
  int64_t ties = 0;
  int64_t snapshots = 0;
  int64_t snapshot_bytes = 0;  // one snapshot: every linear layer's state (0: none)
  int64_t bytes = 0;           // the whole slot
};

RefSlotLayout ref_slot_layout(const ModelSpec& m, int32_t capacity);

// Snapshots of the recurrent states a slot holds (taken where a run computed a chunk of several
// positions: prefill chunks, steps judged together), so that a later epoch can continue from one.
inline constexpr int32_t kRefStateSnapshots = 8;

// Rows of positions one batch of the reference computes at once (all layers), and the bytes of
// that batch's scratch buffers.
int32_t ref_batch_rows(const ModelSpec& m);
int64_t ref_scratch_bytes(const ModelSpec& m, int32_t rows);

// The attention kernel's partial states when it splits a long context over several blocks (a
// batch of few rows): a fixed buffer; the kernel splits less where it would not fit.
inline constexpr int64_t kRefSplitScratchBytes = int64_t{32} << 20;

// The model's weights as the GPU reference holds them (the float weights, as they are).
int64_t ref_weight_bytes(const ModelSpec& m);

// The most device memory the GPU reference takes for `s` with `mode` (full or sampled): weights,
// scratch, and one slot of the longest request per request that can be live at once.
int64_t cuda_reference_bytes(const Scenario& s, ReferenceMode mode);

}  // namespace kv
