// gather_kv.cu — CUDA op: gather the cached context of prefill sequences from the paged cache into
// contiguous float workspaces [total_ctx_tokens][kv_heads][head_dim].
//
// Reference: kernels/host/gather_kv.cpp. Grid: y walks the sequences, x the elements of one
// sequence's context (grid-stride: ctx_lens lives in device memory). Token t of sequence s goes to
// row ctx_starts[s] + t; its block is block_table[s][t / block_size].
// Addresses come from the descriptor's strides. v_out == nullptr gathers K only (MLA).
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

__global__ void gather_kv_kernel(GatherKvArgs a) {
  const PagedKv& c = a.cache;
  const int64_t row = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  for (int32_t s = blockIdx.y; s < a.num_seqs; s += gridDim.y) {
    const int32_t* table = a.block_table + static_cast<int64_t>(s) * a.block_table_stride;
    const int64_t n = static_cast<int64_t>(a.ctx_lens[s]) * row;
    const int64_t out0 = static_cast<int64_t>(a.ctx_starts[s]) * row;
    for (int64_t e = global_thread(); e < n; e += global_stride()) {
      const int64_t t = e / row, rem = e % row;
      const int64_t block = table[t / c.block_size], entry = t % c.block_size;
      const int64_t h = rem / c.head_dim, f = rem % c.head_dim;
      const float kx = load_k(c, block, entry, h, f);
      const float vx = a.v_out ? load_v(c, block, entry, h, f) : 0.0f;
      a.k_out[out0 + e] = kx;
      if (a.v_out) a.v_out[out0 + e] = vx;
    }
  }
}

}  // namespace

void gather_kv(const GatherKvArgs& a, cudaStream_t stream) {
  if (a.num_seqs <= 0 || a.cache.num_kv_heads <= 0 || a.cache.head_dim <= 0) return;
  // x: a few blocks per sequence; the true context lengths are only known on the device.
  const unsigned gy = static_cast<unsigned>(std::min<int32_t>(a.num_seqs, 65535));
  const unsigned gx = std::max(1u, std::min(grid_for(int64_t{1} << 40) / gy, 64u));
  gather_kv_kernel<<<dim3(gx, gy), kThreads, 0, stream>>>(a);
}

}  // namespace kv::cuda
