// linear_attention.cpp — host op: gated linear attention, the recurrent mixer of hybrid models,
// with its per-sequence state kept as float32 in a block of the shared pool.
//
// Per sequence and head the D x D state S starts from the block (has_initial_state) or from zero,
// is updated row by row (S = g * S + k ⊗ v, g = sigmoid(gate)), produces out = scale * q·S after
// each update, and is stored back into the block once, after the last row. Float accumulation in
// the order a GPU kernel with one thread per value column j would use (i ascending).
//
// A fresh sequence never reads its block: in a hybrid pool the block may hold a KV page's bytes,
// which read as f32 include NaN/Inf. A sequence whose block is -1 (a padded graph row) reads and
// writes nothing, its out rows included. A sequence with zero rows still stores its state (zero
// for a fresh one), as the contract says "the final S is stored back".
//
// The descriptor is validated as a whole before anything is written, so a rejected call leaves
// every buffer as it was.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {
namespace {

[[noreturn]] void reject(const std::string& what) {
  throw std::invalid_argument("linear_attention: " + what);
}

void validate(const LinearAttnArgs& a) {
  if (a.num_seqs < 0 || a.num_heads < 0 || a.head_dim < 0)
    reject("negative size (num_seqs " + std::to_string(a.num_seqs) + ", num_heads " +
           std::to_string(a.num_heads) + ", head_dim " + std::to_string(a.head_dim) + ")");
  if (a.num_seqs == 0) return;
  if (!a.seq_starts || !a.state_blocks || !a.has_initial_state)
    reject("seq_starts, state_blocks and has_initial_state are required when num_seqs > 0");
  const int64_t width = static_cast<int64_t>(a.num_heads) * a.head_dim;
  const int64_t state_floats = width * a.head_dim;
  if (a.seq_starts[0] < 0) reject("seq_starts[0] is negative");
  bool any_state = false, any_rows = false;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    if (a.seq_starts[s + 1] < a.seq_starts[s])
      reject("seq_starts decreases at sequence " + std::to_string(s));
    if (a.state_blocks[s] < -1)
      reject("state block " + std::to_string(a.state_blocks[s]) + " of sequence " +
             std::to_string(s) + " is neither a block nor -1");
    if (a.state_blocks[s] == -1) continue;
    any_state = true;
    any_rows = any_rows || a.seq_starts[s + 1] > a.seq_starts[s];
  }
  if (any_state && state_floats > 0) {
    if (!a.state) reject("state is null");
    // Consecutive blocks closer than one state apart would overwrite each other's state.
    if (a.state_block_stride < state_floats)
      reject("state_block_stride " + std::to_string(a.state_block_stride) + " < state size " +
             std::to_string(state_floats) + " floats");
  }
  if (any_rows && width > 0) {
    if (!a.q || !a.k || !a.v || !a.gate || !a.out) reject("q, k, v, gate and out are required");
    if (a.qkv_row_stride < width || a.out_row_stride < width || a.gate_row_stride < a.num_heads)
      reject("a row stride is shorter than its row");
  }
}

// One head of one sequence: rows [r0, r1), state in/out at `s` (D * D floats, [i key][j value]).
void run_head(const LinearAttnArgs& a, int32_t h, int64_t r0, int64_t r1, float* s) {
  const int32_t d = a.head_dim;
  const int64_t f0 = static_cast<int64_t>(h) * d;
  for (int64_t r = r0; r < r1; ++r) {
    poll_point(2 * static_cast<int64_t>(d) * d);  // --max-seconds
    const float* q = a.q + r * a.qkv_row_stride + f0;
    const float* k = a.k + r * a.qkv_row_stride + f0;
    const float* v = a.v + r * a.qkv_row_stride + f0;
    const float g = 1.0f / (1.0f + expf(-a.gate[r * a.gate_row_stride + h]));
    for (int32_t i = 0; i < d; ++i)
      for (int32_t j = 0; j < d; ++j) s[i * d + j] = g * s[i * d + j] + k[i] * v[j];
    float* out = a.out + r * a.out_row_stride + f0;
    for (int32_t j = 0; j < d; ++j) {
      float acc = 0.0f;
      for (int32_t i = 0; i < d; ++i) acc += q[i] * s[i * d + j];
      out[j] = a.scale * acc;
    }
  }
}

}  // namespace

void linear_attention(const LinearAttnArgs& a) {
  validate(a);
  const int64_t dd = static_cast<int64_t>(a.head_dim) * a.head_dim;
  std::vector<float> s(static_cast<size_t>(dd));
  for (int32_t seq = 0; seq < a.num_seqs; ++seq) {
    const int32_t block = a.state_blocks[seq];
    if (block == -1) continue;  // a padded row: nothing read, nothing written
    float* state = a.state + static_cast<int64_t>(block) * a.state_block_stride;
    for (int32_t h = 0; h < a.num_heads; ++h) {
      float* sh = state + h * dd;
      for (int64_t e = 0; e < dd; ++e) s[e] = a.has_initial_state[seq] ? sh[e] : 0.0f;
      run_head(a, h, a.seq_starts[seq], a.seq_starts[seq + 1], s.data());
      for (int64_t e = 0; e < dd; ++e) sh[e] = s[e];
    }
  }
}

}  // namespace kv::host
