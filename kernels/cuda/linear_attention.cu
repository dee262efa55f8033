// linear_attention.cu — CUDA op: gated linear attention, the recurrent mixer of hybrid models,
// with its per-sequence D x D float32 state kept in a block of the shared pool.
//
// Reference: kernels/host/linear_attention.cpp. One CTA per (head, sequence), one thread per value
// column j: thread j owns S[:, j] and, row after row, computes
//     S[i][j] = g * S[i][j] + k[i] * v[j]   and   out[j] = scale * sum_i q[i] * S[i][j]
// with i ascending — the order the host's comment names — while q and k of the row sit in shared
// memory. The state lives in shared memory when it fits in the default 48 KB (D <= 109); larger
// heads update the state block in place in global memory (same arithmetic, same final bytes;
// a fresh sequence's block is zeroed first instead of read). The only difference from the host is
// FMA contraction in the update, i.e. float rounding.
//
// As on the host: a fresh sequence (has_initial_state = 0) never reads its block, which in a hybrid
// pool may hold a KV page's bytes; a sequence whose block is -1 (a padded graph row) reads and
// writes nothing, out rows included; a sequence with no rows still stores its state. The host
// rejects descriptors whose device-side contents break the contract (a block id below -1,
// decreasing seq_starts); a kernel cannot throw, so here such a sequence is skipped (block < -1)
// or has no rows (seq_starts decreasing).
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace kv::cuda {
namespace {

constexpr size_t kDefaultSmem = 48 * 1024;

__global__ void linear_attention_kernel(LinearAttnArgs a, bool state_in_smem) {
  extern __shared__ float smem[];
  const int32_t d = a.head_dim, j = threadIdx.x, h = blockIdx.x;
  const int64_t dd = static_cast<int64_t>(d) * d, f0 = static_cast<int64_t>(h) * d;
  float* qs = smem;       // [d]
  float* ks = smem + d;   // [d]
  float* s_sh = smem + 2 * d;  // [d][d] when state_in_smem
  const bool active = j < d;
  for (int32_t seq = blockIdx.y; seq < a.num_seqs; seq += gridDim.y) {
    const int32_t block = a.state_blocks[seq];
    if (block < 0) continue;  // -1: a padded row; below -1: a contract break (host throws)
    float* sg = a.state + static_cast<int64_t>(block) * a.state_block_stride + h * dd;
    float* s = state_in_smem ? s_sh : sg;
    const bool initial = a.has_initial_state[seq] != 0;
    __syncthreads();  // the previous sequence is done with the shared buffers
    if (active && (state_in_smem || !initial))
      for (int32_t i = 0; i < d; ++i) s[i * d + j] = initial ? sg[i * d + j] : 0.0f;
    const int64_t r0 = a.seq_starts[seq], r1 = a.seq_starts[seq + 1];
    for (int64_t r = r0; r < r1; ++r) {
      __syncthreads();  // the previous row is done with qs / ks
      if (active) {
        qs[j] = a.q[r * a.qkv_row_stride + f0 + j];
        ks[j] = a.k[r * a.qkv_row_stride + f0 + j];
      }
      __syncthreads();
      if (!active) continue;
      const float g = 1.0f / (1.0f + expf(-a.gate[r * a.gate_row_stride + h]));
      const float vj = a.v[r * a.qkv_row_stride + f0 + j];
      float acc = 0.0f;
      for (int32_t i = 0; i < d; ++i) {
        const float x = g * s[i * d + j] + ks[i] * vj;
        s[i * d + j] = x;
        acc += qs[i] * x;
      }
      a.out[r * a.out_row_stride + f0 + j] = a.scale * acc;
    }
    if (active && state_in_smem)
      for (int32_t i = 0; i < d; ++i) sg[i * d + j] = s[i * d + j];
  }
}

}  // namespace

void linear_attention(const LinearAttnArgs& a, cudaStream_t stream) {
  if (a.num_seqs < 0 || a.num_heads < 0 || a.head_dim < 0)
    throw std::invalid_argument("linear_attention: negative size (num_seqs " +
                                std::to_string(a.num_seqs) + ", num_heads " +
                                std::to_string(a.num_heads) + ", head_dim " +
                                std::to_string(a.head_dim) + ")");
  if (a.head_dim > 1024)
    throw std::invalid_argument("linear_attention: head_dim " + std::to_string(a.head_dim) +
                                " > 1024 is not supported by the CUDA kernel (one thread per column)");
  if (a.num_seqs == 0 || a.num_heads == 0 || a.head_dim == 0) return;
  const size_t d = static_cast<size_t>(a.head_dim);
  const size_t with_state = (2 * d + d * d) * sizeof(float);
  const bool in_smem = with_state <= kDefaultSmem;
  const size_t smem = in_smem ? with_state : 2 * d * sizeof(float);
  const unsigned threads = static_cast<unsigned>((a.head_dim + 31) / 32 * 32);
  const dim3 grid(a.num_heads, std::min(a.num_seqs, 65535));
  linear_attention_kernel<<<grid, threads, smem, stream>>>(a, in_smem);
}

}  // namespace kv::cuda
