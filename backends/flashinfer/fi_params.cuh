// fi_params.cuh — what the plugin's FlashInfer params share across its kernels: the
// settings of plain softmax attention (no sliding window, no soft cap, no RoPE; decode and both
// batch prefills), and for the two batch prefills (over the paged cache, fi_prefill.cu; over
// ragged K/V, fi_ragged.cu) the schedule PrefillPlan left in the int workspace and the dispatch
// over the CTA_TILE_Q it chose (the plugin compiles 16, 64 and 128).
#pragma once

#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <flashinfer/pos_enc.cuh>

#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/flashinfer/fi_common.h"

namespace kvfi {

// Plain softmax attention: FlashInfer's default variant with no custom mask, sliding window,
// logits soft cap or ALiBi, and no RoPE applied inside the kernel.
using Variant = flashinfer::DefaultAttention<false, false, false, false>;
inline constexpr auto kNoRope = flashinfer::PosEncodingMode::kNone;

template <class P>
void set_plain_attention(P& p, float sm_scale) {
  p.window_left = -1;
  p.logits_soft_cap = 0.f;
  p.sm_scale = sm_scale;
  p.rope_rcp_scale = p.rope_rcp_theta = 1.f;
}

template <class P>
void set_prefill_schedule(P& p, void* ws, const flashinfer::PrefillPlanInfo& pi) {
  using flashinfer::GetPtrFromBaseOffset;
  p.request_indices = GetPtrFromBaseOffset<int32_t>(ws, pi.request_indices_offset);
  p.qo_tile_indices = GetPtrFromBaseOffset<int32_t>(ws, pi.qo_tile_indices_offset);
  p.kv_tile_indices = GetPtrFromBaseOffset<int32_t>(ws, pi.kv_tile_indices_offset);
  p.o_indptr = GetPtrFromBaseOffset<int32_t>(ws, pi.o_indptr_offset);
  p.kv_chunk_size_ptr = GetPtrFromBaseOffset<int32_t>(ws, pi.kv_chunk_size_ptr_offset);
  p.padded_batch_size = static_cast<uint32_t>(pi.padded_batch_size);
  p.max_total_num_rows = static_cast<uint32_t>(pi.total_num_rows);
}

// launch(std::integral_constant<uint32_t, CTA_TILE_Q>{}) for the tile the plan chose.
template <class Launch>
cudaError_t with_cta_tile(int64_t cta_tile_q, Launch&& launch) {
  switch (cta_tile_q) {
    case 16: return launch(std::integral_constant<uint32_t, 16>{});
    case 64: return launch(std::integral_constant<uint32_t, 64>{});
    case 128: return launch(std::integral_constant<uint32_t, 128>{});
  }
  throw OpError("PrefillPlan chose CTA_TILE_Q " + std::to_string(cta_tile_q) +
                ", which this plugin does not compile");
}

}  // namespace kvfi
