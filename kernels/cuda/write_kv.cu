// write_kv.cu — CUDA op: store the K and V rows of the step into their paged-cache slots.
//
// Reference: kernels/host/write_kv.cpp. One thread per (token, head, feature) element, grid-stride.
// The stored value is x / scale in the cache dtype (store_from_f32 of dtype.cuh: the same bit-exact
// rounding as the host), addressed only through k_offset / v_offset. A slot of -1 (padded row) is
// skipped. v == nullptr is the K-only write of MLA: V memory is not touched. A thread stores its K
// element before its V element, so even a descriptor whose V aliases K ends with V's value, as on
// the host. Two tokens mapped to the same slot race here (the host keeps the last), as they do in
// vLLM's reshape_and_cache; the engine never maps two real tokens to one slot.
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

__global__ void write_kv_kernel(WriteKvArgs a) {
  const PagedKv& c = a.cache;
  const int64_t row = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const int64_t n = a.num_tokens * row;
  for (int64_t e = global_thread(); e < n; e += global_stride()) {
    const int64_t t = e / row, rem = e % row;
    const int64_t slot = a.slot_mapping[t];
    if (slot < 0) continue;  // padded row
    const int64_t block = slot / c.block_size, entry = slot % c.block_size;
    const int64_t h = rem / c.head_dim, f = rem % c.head_dim;
    store_from_f32(c.k, k_offset(c, block, entry, h, f), c.dtype,
                   a.k[t * a.k_row_stride + rem] / c.k_scale);
    if (a.v)
      store_from_f32(c.v, v_offset(c, block, entry, h, f), c.dtype,
                     a.v[t * a.v_row_stride + rem] / c.v_scale);
  }
}

}  // namespace

void write_kv(const WriteKvArgs& a, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(a.num_tokens) * a.cache.num_kv_heads * a.cache.head_dim;
  if (n <= 0) return;
  write_kv_kernel<<<grid_for(n), kThreads, 0, stream>>>(a);
}

}  // namespace kv::cuda
