// op_args.cuh — the argument descriptors of every op a device implements.
//
// These are the plain interface between the engine and a backend (and, later, a user's kernels
// loaded through a C ABI): raw device pointers, sizes, strides and dtypes, nothing of the engine.
// All row strides are in elements. "rows" are tokens of the step, in step order: decode rows
// first, then prefill tokens of requests that have cached context, then those without.
#pragma once

#include <cstdint>

#include "dtype.cuh"
#include "paged_kv.cuh"

namespace kv {

// Fill patterns for zero_blocks / poison_blocks / fill_buffer. `random_bits` writes bytes from a
// seeded generator, so f16/bf16/fp8 payloads include NaN and Inf codes as real stale memory does.
enum class FillPattern : int32_t { zero = 0, nan = 1, inf = 2, random_bits = 3 };

// Copy K and V of `num_tokens` rows into the cache at their slots (slot = block * block_size +
// entry). A slot of -1 (a padded row) is skipped. Quantises to the cache dtype (fp8: stores
// x / k_scale and x / v_scale). MLA passes v = nullptr: its V is the latent K, written once.
struct WriteKvArgs {
  PagedKv cache;
  const float* k = nullptr;  // [num_tokens][kv_heads * head_dim]
  const float* v = nullptr;  // may be null: K only
  int64_t k_row_stride = 0, v_row_stride = 0;
  const int64_t* slot_mapping = nullptr;  // [num_tokens]
  int32_t num_tokens = 0;
  void* workspace = nullptr;  // a backend's, workspace_bytes(KVCHECK_OP_WRITE_KV) long
  size_t workspace_bytes = 0;
};

// Decode split-KV plan as it lives in device memory (the plan buffer the decode plan step fills
// before each step, see DecodePlanArgs):
//   meta[0]          = kv_chunk_tokens: tokens per split, a multiple of the block size
//   meta[1 + row]    = number of splits of that row (0 for a padded row)
// Split s of a row covers tokens [s * kv_chunk_tokens, min((s + 1) * kv_chunk_tokens, seq_len)).
inline constexpr int kDecodeMetaHeader = 1;

// The decode plan step: on the host, before every step with decode rows and before a captured
// graph replays, the device's planner writes its schedule for these sequence lengths into `plan`
// (device memory the engine owns, plan_bytes long), which paged_decode then reads as split_meta.
// The built-in planner writes the kDecodeMetaHeader format: plan_decode_splits, or for an fp8
// cache the fp8 path's own builder (decode_splits.h). A graph captures the plan buffer's address,
// so the engine keeps it at one address for the run (seed 003 is a plan written elsewhere).
struct DecodePlanArgs {
  const int32_t* seq_lens_host = nullptr;  // host memory [num_rows]; padded rows 0
  int32_t num_rows = 0;
  int32_t block_size = 0;
  DType cache_dtype = DType::f32;
  int32_t max_splits = 1;  // split-KV partitions per row at most
  int32_t num_q_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t v_dim = 0;
  bool latent = false;       // the plan serves MLA layers (the latent cache)
  bool interleaved = false;  // ... attention layers over a K/V-interleaved cache
  int32_t* plan = nullptr;  // device memory
  size_t plan_bytes = 0;
  int32_t max_blocks_per_seq = 0;  // row length of paged_decode's block table (the run's limit)
  // engine.decode_splits "uniform": every real row gets the batch's largest split count (the
  // built-in planner; a backend's own planner may ignore it).
  bool uniform_splits = false;
};

// Paged decode, one query token per row, split-KV (flash-decoding) with a state merge. The kernel
// works tile by tile, a tile being one cache block: it masks scores past the sequence end but
// multiplies P·V over the whole tile, as FlashMLA-style kernels do, so stale NaN/Inf in the unused
// tail of the last block reaches the output unless new blocks are zeroed. A row with seq_len 0
// (a padded row) writes nothing.
//
// MLA decode is this op over the latent cache: num_kv_heads = 1, head_dim = kv_lora_rank +
// qk_rope_dim, cache.v = cache.k, v_dim = kv_lora_rank (V is the first v_dim latent features), and
// q already projected into the latent space (absorbed weights).
struct PagedDecodeArgs {
  PagedKv cache;
  const float* q = nullptr;  // [rows][num_q_heads * head_dim]
  int64_t q_row_stride = 0;
  float* out = nullptr;  // [rows][num_q_heads * v_dim]
  int64_t out_row_stride = 0;
  const int32_t* block_table = nullptr;  // [rows][block_table_stride]
  int32_t block_table_stride = 0;
  const int32_t* seq_lens = nullptr;   // [rows]
  const int32_t* split_meta = nullptr;  // see kDecodeMetaHeader
  float* partial_out = nullptr;         // workspace [rows][max_splits][num_q_heads][v_dim]
  float* partial_lse = nullptr;         // workspace [rows][max_splits][num_q_heads]
  int32_t max_splits = 1;
  int32_t num_rows = 0;
  int32_t num_q_heads = 0;
  int32_t v_dim = 0;   // features of V read and written per head; 0 means cache.head_dim
  float scale = 1.0f;  // softmax scale applied to q·k
};

// Gather the cached context of prefill sequences from the paged cache into contiguous float
// workspaces [total_ctx_tokens][kv_heads][head_dim], addressing the cache through its strides.
// (The seed-004 bug is the engine handing it with_shape_strides(cache): paged_kv.cuh.)
struct GatherKvArgs {
  PagedKv cache;
  const int32_t* block_table = nullptr;  // [num_seqs][block_table_stride]
  int32_t block_table_stride = 0;
  const int32_t* ctx_lens = nullptr;    // [num_seqs] tokens of cached context per sequence
  const int32_t* ctx_starts = nullptr;  // [num_seqs + 1] prefix sums of ctx_lens
  float* k_out = nullptr;
  float* v_out = nullptr;  // may be null: K only (MLA, whose V is the latent K)
  int32_t num_seqs = 0;
  int32_t total_ctx = 0;  // ctx_starts[num_seqs]: rows of k_out / v_out (the ops read the array)
};

// Attention of query rows over contiguous float K/V, per sequence:
//   causal = false: every query of sequence i sees all keys of sequence i (context attention);
//   causal = true:  query j of sequence i sees keys 0..j of sequence i (new tokens, q_len == k_len).
// Writes out and lse (natural log) for every query row of every sequence. Scores use the first
// head_dim features of q and k; the output of a head is the first v_dim features of V (MLA: k and
// v both point at the latent rows, head_dim = kv_lora_rank + qk_rope_dim, v_dim = kv_lora_rank).
struct VarlenAttnArgs {
  const float* q = nullptr;
  int64_t q_row_stride = 0;
  const float* k = nullptr;  // [total keys][kv_heads * head_dim]
  const float* v = nullptr;
  int64_t kv_row_stride = 0;
  const int32_t* q_starts = nullptr;  // [num_seqs + 1] row offsets into q / out / lse
  const int32_t* k_starts = nullptr;  // [num_seqs + 1] row offsets into k / v
  float* out = nullptr;  // [rows][num_q_heads * v_dim]
  int64_t out_row_stride = 0;
  float* lse = nullptr;  // [rows][num_q_heads]
  int32_t num_seqs = 0;
  int32_t num_rows = 0;  // q_starts[num_seqs]: query rows (the ops read the array)
  int32_t num_keys = 0;  // k_starts[num_seqs]: key rows
  int32_t num_q_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t v_dim = 0;  // 0 means head_dim
  float scale = 1.0f;
  bool causal = false;
  // K and V are used as the cache stores them: every k / v element read is replaced by
  // round_through_scaled(element, kv_dtype, k_scale / v_scale) (dtype.cuh). The engine sets the
  // cache's dtype and scales for the new tokens of a prefill (their K/V come straight from the
  // projections, not from the cache) so that they attend in the cache's precision, as the cached
  // context does; f32 with scale 1 leaves values unchanged.
  DType kv_dtype = DType::f32;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  // The longest sequence's query rows and keys (host values, 0: not given): what a kernel that
  // sizes its grid on the host needs (FlashAttention's max_seqlen_q / max_seqlen_k). The built-in
  // ops read the starts arrays instead.
  int32_t max_q_len = 0;
  int32_t max_k_len = 0;
  // A backend's scratch (workspace_bytes(KVCHECK_OP_VARLEN_ATTENTION) long) and host mirrors of
  // q_starts / k_starts for a host-side planner; the built-in ops use neither.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  const int32_t* q_starts_host = nullptr;
  const int32_t* k_starts_host = nullptr;
};

// merge_attn_states: rows [0, num_merge) combine state a (context) with state b (new tokens) by
// their lse; rows [num_merge, num_rows) have no context and copy b. `num_merge` is
// prefill_tokens_with_context; passing num_rows instead is the seed-002 bug.
struct MergeStatesArgs {
  const float* out_a = nullptr;
  const float* lse_a = nullptr;
  const float* out_b = nullptr;
  const float* lse_b = nullptr;
  float* out = nullptr;
  float* lse = nullptr;  // may be null
  int64_t row_stride = 0;  // of out_a, out_b and out
  int32_t num_rows = 0;
  int32_t num_merge = 0;
  int32_t num_heads = 0;
  int32_t head_dim = 0;
};

// Fill whole blocks (K and V pages) of a cache with a pattern: zero_blocks and poison_blocks.
struct FillBlocksArgs {
  PagedKv cache;
  const int32_t* block_ids = nullptr;
  int32_t num_ids = 0;
  FillPattern pattern = FillPattern::zero;
  uint64_t seed = 0;
};

// The batch-wide op: dynamic per-tensor fp8 (e4m3) quantise-dequantise of rows [0, num_rows) of x
// into y (y may equal x: in place). The scale is amax / 448 with amax over rows [0, *amax_rows) of
// x when amax_rows is set (the real rows, read from a persistent buffer a graph replay sees), else
// over [0, amax_rows_fixed). amax propagates NaN, as torch.amax does. A zero amax copies x to y.
struct QuantFp8Args {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t row_stride = 0;  // of x and y
  int32_t cols = 0;
  int32_t num_rows = 0;
  const int32_t* amax_rows = nullptr;
  int32_t amax_rows_fixed = 0;
  float* scale_out = nullptr;  // optional: the scale used, one float
};

// ---- the synthetic model's dense ops ------------------------------------------------------------

// out[r] = table[tokens[r]] + sinusoidal(positions[r]). A token outside [0, vocab) (a poisoned
// padded row) writes a NaN row instead of reading out of bounds.
struct EmbedArgs {
  const int32_t* tokens = nullptr;
  const int32_t* positions = nullptr;
  const float* table = nullptr;  // [vocab][hidden]
  float* out = nullptr;          // [rows][hidden]
  int32_t num_rows = 0;
  int32_t hidden = 0;
  int32_t vocab = 0;
};

// out[r] = x[r] / rms(x[r])  (no learned gain).
struct RmsNormArgs {
  const float* x = nullptr;
  float* out = nullptr;
  int32_t num_rows = 0;
  int32_t cols = 0;
  float eps = 1e-6f;
};

// out[r] (+)= W x[r] + bias, W row-major [out_dim][in_dim]. `accumulate` adds to out (residual).
// With groups > 1 it is a per-group (per-head) linear: group g reads x[r][g * x_group_stride ..
// + in_dim), uses W + g * out_dim * in_dim and bias + g * out_dim, and writes out[r][g * out_dim ..
// + out_dim) (MLA's per-head up-projection of the latent output).
struct LinearArgs {
  const float* x = nullptr;
  int64_t x_row_stride = 0;
  const float* w = nullptr;
  const float* bias = nullptr;  // may be null
  float* out = nullptr;
  int64_t out_row_stride = 0;
  int32_t num_rows = 0;
  int32_t in_dim = 0;
  int32_t out_dim = 0;
  bool accumulate = false;
  int32_t groups = 1;
  int64_t x_group_stride = 0;  // 0 means in_dim
};

// ---- linear attention (the recurrent layers of hybrid models) -----------------------------------

// Gated linear attention over sequences of rows, per head h with D = head_dim:
//   S = has_initial_state[s] ? state of block state_blocks[s] : 0        S is [D key][D value]
//   for each row t of the sequence, in order:
//     g = 1 / (1 + exp(-gate[t][h]))
//     S[i][j] = g * S[i][j] + k[t][h][i] * v[t][h][j]
//     out[t][h][j] = scale * sum_i q[t][h][i] * S[i][j]
//   the final S is stored back into the block.
// The state lives in the block pool as float32: element (block b, head h, i, j) is at
// state[b * state_block_stride + (h * D + i) * D + j]. In a hybrid pool that block may have been
// a KV block a moment ago and may be one again: a fresh sequence (has_initial_state = 0) never
// reads it. A sequence whose state block is -1 (a padded graph row) reads and writes nothing.
// Rows of sequence s are [seq_starts[s], seq_starts[s + 1]); decode rows are one-row sequences.
struct LinearAttnArgs {
  float* state = nullptr;
  int64_t state_block_stride = 0;  // floats between consecutive blocks
  const float* q = nullptr;        // [rows][num_heads * head_dim]
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t qkv_row_stride = 0;      // of q, k and v
  const float* gate = nullptr;     // [rows][num_heads] gate logits
  int64_t gate_row_stride = 0;
  float* out = nullptr;            // [rows][num_heads * head_dim]
  int64_t out_row_stride = 0;
  const int32_t* seq_starts = nullptr;         // [num_seqs + 1]
  const int32_t* state_blocks = nullptr;       // [num_seqs]
  const int32_t* has_initial_state = nullptr;  // [num_seqs]
  int32_t num_seqs = 0;
  int32_t num_rows = 0;      // seq_starts[num_seqs] (the op reads the array)
  int32_t state_blocks_total = 0;  // blocks of the pool the state view spans
  int32_t num_heads = 0;
  int32_t head_dim = 0;
  float scale = 1.0f;
};

// tokens[r] = argmax over logits[r]; ties go to the lowest index; a row with a NaN gives -1.
struct ArgmaxArgs {
  const float* logits = nullptr;
  int32_t* tokens = nullptr;
  int32_t num_rows = 0;
  int32_t vocab = 0;
};

// Fused paged prefill (a backend's op; kvcheck's own devices run the gather -> varlen -> merge
// chain instead): the prefill rows attend to their sequence's cached context and causally to the
// sequence's new tokens, all read from the paged cache (write_kv stored the new tokens first).
// Sequence s has ctx_lens[s] cached tokens and q_starts[s+1] - q_starts[s] new ones at positions
// ctx_lens[s] ... of its block table; its row j attends to keys [0, ctx_lens[s] + j].
struct PagedPrefillArgs {
  PagedKv cache;
  const float* q = nullptr;  // [rows][num_q_heads * head_dim]
  int64_t q_row_stride = 0;
  float* out = nullptr;  // [rows][num_q_heads * v_dim]
  int64_t out_row_stride = 0;
  float* lse = nullptr;               // [rows][num_q_heads], may be null
  const int32_t* q_starts = nullptr;  // [num_seqs + 1]
  const int32_t* ctx_lens = nullptr;  // [num_seqs]
  const int32_t* block_table = nullptr;  // [num_seqs][block_table_stride]
  int32_t block_table_stride = 0;
  void* workspace = nullptr;  // the backend's, workspace_bytes(KVCHECK_OP_PAGED_PREFILL) long
  size_t workspace_bytes = 0;
  int32_t num_seqs = 0;
  int32_t num_rows = 0;  // q_starts[num_seqs]
  int32_t num_q_heads = 0;
  int32_t v_dim = 0;  // 0 means cache.head_dim
  float scale = 1.0f;
  int32_t max_q_len = 0;    // host values: the longest sequence's new tokens and context
  int32_t max_ctx_len = 0;
  const int32_t* q_starts_host = nullptr;  // host mirrors of q_starts and ctx_lens (the call's)
  const int32_t* ctx_lens_host = nullptr;
};

// Row-wise conversion between float32 and the 16-bit dtypes, the engine's bridge to a backend's
// declared conventions (its io dtype, its lse base and empty-row value): for r < rows, c < cols,
//   x = value of src[r * src_row_stride + c];  y = (map_value && x == match) ? replace : x * scale
//   dst[r * dst_row_stride + c] = y rounded to dst_dtype (round to nearest even).
// f32 / f16 / bf16 only. src and dst may be the same buffer with the same strides (in place).
struct ConvertRowsArgs {
  const void* src = nullptr;
  DType src_dtype = DType::f32;
  int64_t src_row_stride = 0;  // elements
  void* dst = nullptr;
  DType dst_dtype = DType::f32;
  int64_t dst_row_stride = 0;
  int32_t rows = 0;
  int32_t cols = 0;
  float scale = 1.0f;
  bool map_value = false;
  float match = 0.0f;    // compared as float32 (+inf == +inf)
  float replace = 0.0f;
};

}  // namespace kv
