// cache_layout.h — how the engine carves every layer's cache out of device memory.
//
// separate pool: each attention-like layer owns one buffer (attention: K and V pages in the
// scenario's layout; mla: one latent page per block).
// hybrid pool (models with linear-attention layers, as vLLM lays out hybrid models): one buffer
// per "slot", shared by the j-th attention-like layer and the j-th linear layer. Every view of a
// slot uses the same block stride, `page_bytes` = the largest per-block size among the kinds (the
// smaller pages are padded, through explicit strides, not copies); attention K and V of a block
// sit together ([K_b][V_b], the interleaved layout) and a linear layer's block is one request's
// float32 state. A block id handed to the KV group in one step and to the state group in a later
// one is therefore read byte for byte as the other kind's data.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/paged_kv.cuh"
#include "scenario/scenario.h"

namespace kv {

// Bytes one block of one layer of this kind holds, before any padding.
int64_t block_bytes(LayerKind kind, const ModelSpec& m, const CacheSpec& c);

struct CacheLayoutPlan {
  std::vector<int32_t> buffer_of_layer;  // per layer: index into buffer_bytes
  std::vector<int64_t> buffer_bytes;     // per buffer
  int64_t page_bytes = 0;                // hybrid: the block stride of every view; else 0
  int64_t total_bytes() const;
};

CacheLayoutPlan plan_cache_layout(const ModelSpec& m, const CacheSpec& c);

// The paged view of an attention or mla layer's cache inside its buffer.
PagedKv layer_kv_view(void* base, LayerKind kind, const ModelSpec& m, const CacheSpec& c,
                      const CacheLayoutPlan& plan);

// A linear layer's state view: float elements between consecutive blocks.
int64_t state_block_stride(const ModelSpec& m, const CacheLayoutPlan& plan);

// The same state blocks described as a one-page-per-block f32 cache, so that zero_blocks /
// poison_blocks fill exactly the state bytes through the usual op.
PagedKv state_fill_view(void* base, const ModelSpec& m, const CacheSpec& c,
                        const CacheLayoutPlan& plan);

}  // namespace kv
