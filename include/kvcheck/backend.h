/* kvcheck/backend.h — the backend plugin ABI of kvcheck, version 1.
 *
 * A backend is a shared library that implements some or all of the attention and KV-cache ops of
 * kvcheck's miniature paged-attention engine. kvcheck keeps everything else: the engine (block
 * pool, scheduler, step plans, CUDA graphs), the synthetic model's dense ops (embed, rms_norm,
 * linear, argmax: never replaced), the float64 reference and the checks. It loads the library with
 * `kvcheck run S.json --backend path/libfoo.so`, calls the one exported entry point, and from then
 * on routes each op the backend implements to it; the others run on kvcheck's built-in device
 * (`--device host|cuda`).
 *
 * Plain C (C11 and C++ both compile it). The rules of the boundary:
 *   - One entry point, kvcheck_backend_init (below), returns a table of ops. Every struct that is
 *     passed by pointer starts with its own size (struct_size), so a later version can grow it: a
 *     reader uses a field only if struct_size says the writer had it. The structs embedded in
 *     others (kvcheck_tensor, kvcheck_paged_kv, kvcheck_caps) are frozen within an ABI version and
 *     grow only into their reserved fields (zero today).
 *   - Destination passing: every op writes into buffers kvcheck owns and allocates nothing while it
 *     runs; an op that needs scratch space declares how much (workspace_bytes) and kvcheck passes
 *     it. Work goes on the stream kvcheck gives (a cudaStream_t on CUDA, NULL on the host).
 *   - Every op returns KVCHECK_OK or an error status, with a one-line message written into the
 *     caller's buffer (err, err_size; always NUL-terminated, truncated if it does not fit). No C++
 *     exception may cross the boundary.
 *   - Tensors are DLPack DLTensors (element strides, never NULL here) wrapped in kvcheck_tensor,
 *     whose `dtype` field is the authority: DLPack 0.6 has no fp8 code. A tensor's data pointer is
 *     device memory of the run's device (kDLCPU on the host, kDLCUDA on a GPU); only the plan
 *     step's metadata is host memory, and says so. kvcheck passes byte_offset 0 and data pointing
 *     at element 0 (not 256-byte aligned: an interleaved V view starts one page into a block). The
 *     first dimension of a row tensor is exact: the rows of this call. An absent optional tensor
 *     has data NULL and ndim 0.
 *   - Nothing is implied that is not declared. A backend declares its capabilities and conventions
 *     (kvcheck_caps); kvcheck adapts to them (LSE base at its own merges, padding of graph rows,
 *     zeroing of new blocks) and refuses to run a scenario the declaration cannot take. A backend
 *     that does something other than what it declared is a bug kvcheck is there to catch.
 *
 * Rows: the tokens of a step, in step order: decode rows first, then the prefill tokens of
 * sequences with cached context, then those without. Graph-padded rows follow the real decode rows
 * of a padded decode step and are marked as the backend's padding contract asks (kvcheck_caps).
 *
 * Write a backend: examples/backend-minimal/ is a small one in C.
 */
#ifndef KVCHECK_BACKEND_H
#define KVCHECK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVCHECK_BACKEND_ABI_VERSION 1

/* The entry point's name, for dlsym. */
#define KVCHECK_BACKEND_INIT_SYMBOL "kvcheck_backend_init"

/* ---- statuses ------------------------------------------------------------------------------ */

typedef enum {
  KVCHECK_OK = 0,
  KVCHECK_ERROR = 1,        /* the op failed: a verdict about the backend (exit 1) */
  KVCHECK_UNSUPPORTED = 2,  /* init only: this backend cannot serve the asked ABI version/device */
} kvcheck_status;

/* ---- element types ------------------------------------------------------------------------- */

typedef enum {
  KVCHECK_F32 = 0,
  KVCHECK_F16 = 1,
  KVCHECK_BF16 = 2,
  KVCHECK_FP8_E4M3 = 3, /* OCP e4m3fn: no inf, NaN = 0x7f/0xff; stored = value / scale */
  KVCHECK_I32 = 16,
  KVCHECK_I64 = 17,
  KVCHECK_U8 = 18, /* raw bytes: plan buffers and workspaces */
} kvcheck_dtype;

#define KVCHECK_DTYPE_BIT(d) (1u << (d))

/* A DLTensor and the element type kvcheck means by it. dl.dtype is filled in too where DLPack 0.6
 * has a code (f32, f16, bf16, i32, i64, u8); for fp8 it says {kDLUInt, 8, 1}. */
typedef struct {
  DLTensor dl;
  int32_t dtype; /* kvcheck_dtype */
  int32_t reserved[3];
} kvcheck_tensor;

/* ---- the paged KV cache -------------------------------------------------------------------- */

typedef enum {
  /* K pages of all blocks, then V pages of all blocks (or two buffers). */
  KVCHECK_LAYOUT_KV_SEPARATE = 0,
  /* [K0][V0][K1][V1]...: K and V of a block adjacent, block stride 2 x page (hybrid models). */
  KVCHECK_LAYOUT_KV_INTERLEAVED = 1,
  /* MLA: one latent row per token (kv_lora_rank + qk_rope_dim features, one "head"); V is its first
   * v_dim features, so v.data == k.data. */
  KVCHECK_LAYOUT_MLA_LATENT = 2,
} kvcheck_kv_layout;

#define KVCHECK_LAYOUT_BIT(l) (1u << (l))

/* One layer's cache. k and v are 4-d views [num_blocks][block_size][num_kv_heads][head_dim] with
 * element strides (block, entry, head, 1): always address through the strides, never from the
 * shape (that is a real bug class: vLLM PR 37228). Slot s is block s / block_size, entry
 * s % block_size. Block null_block (0) is reserved: kvcheck never hands it to a request, padded
 * rows point at it, and nothing may be written into it. */
typedef struct {
  uint32_t struct_size;
  int32_t layout; /* kvcheck_kv_layout */
  int32_t dtype;  /* kvcheck_dtype of the stored elements */
  int32_t num_blocks;
  int32_t block_size;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t null_block;
  kvcheck_tensor k;
  kvcheck_tensor v;
  float k_scale; /* fp8: per-tensor dequantisation scales (value = stored * scale); else 1 */
  float v_scale;
  int64_t reserved[4];
} kvcheck_paged_kv;

/* ---- ops ----------------------------------------------------------------------------------- */
/* q / out tensors are in the io dtype the backend asked for (kvcheck_caps.io_dtype); lse tensors
 * are float32 in the backend's declared base. Row tensors are 3-d [rows][heads][features]. */

/* write_kv: store the step's K and V rows at their slots, converted to the cache dtype (fp8:
 * stored = value / scale). A negative slot (a padded row) is skipped. MLA: v is absent (dl.data
 * NULL): the latent row is K, written once. k, v: [num_tokens][num_kv_heads][head_dim] float32.
 * workspace: scratch of workspace_bytes(KVCHECK_OP_WRITE_KV) bytes for this call's figures (NULL
 * data if 0); a decode step's write_kv may be captured into a CUDA graph, so an op that stages
 * through it must do so on the stream, not from the host. */
typedef struct {
  uint32_t struct_size;
  kvcheck_paged_kv cache;
  kvcheck_tensor k;
  kvcheck_tensor v;
  kvcheck_tensor slot_mapping; /* i64 [num_tokens] */
  int32_t num_tokens;
  kvcheck_tensor workspace; /* u8 [workspace_bytes] (added in v1: check struct_size) */
} kvcheck_write_kv_args;

/* paged_decode: one query row per sequence over its cached tokens (the current token included: it
 * was written by write_kv before), out = softmax(scale * q.k) . V per head, with GQA (query head h
 * reads kv head h / (num_q_heads / num_kv_heads)). Writes lse (natural log or base 2, as declared)
 * if lse.dl.data is not NULL. Over a KVCHECK_LAYOUT_MLA_LATENT cache this is MLA decode: q is
 * already in the latent space (absorbed weights), head_dim = kv_lora_rank + qk_rope_dim, and the
 * output of a head is the first v_dim latent features.
 * Padded rows (graph replays) come as the padding contract says (kvcheck_caps.pad_*). A row of
 * seq_len 0 must leave its output untouched or zero, never NaN.
 * plan: the persistent buffer paged_decode_plan filled this step (NULL data without a plan);
 * workspace: scratch of workspace_bytes(KVCHECK_OP_PAGED_DECODE) bytes (NULL data if 0). */
typedef struct {
  uint32_t struct_size;
  kvcheck_paged_kv cache;
  kvcheck_tensor q;            /* [num_rows][num_q_heads][head_dim] */
  kvcheck_tensor out;          /* [num_rows][num_q_heads][v_dim] */
  kvcheck_tensor lse;          /* f32 [num_rows][num_q_heads], optional */
  kvcheck_tensor block_table;  /* i32 [num_rows][max_blocks_per_seq] */
  kvcheck_tensor seq_lens;     /* i32 [num_rows] */
  kvcheck_tensor plan;         /* u8 [plan_bytes] */
  kvcheck_tensor workspace;    /* u8 [workspace_bytes] */
  int32_t num_rows;
  int32_t num_q_heads;
  int32_t v_dim;
  float scale;
  int32_t max_splits;          /* the engine's split-KV limit, as the plan step got it */
} kvcheck_paged_decode_args;

/* paged_decode_plan (optional): called on the host before every step that has decode rows, before
 * the step runs or its CUDA graph replays, with the step's metadata in host memory. It writes its
 * plan (split-KV schedule, tile counts ...) into `plan`, a device buffer kvcheck owns and keeps at
 * one address for the run (a captured graph reads it there: vLLM PR 35175 is a plan written
 * elsewhere), using `stream` for any copy. It must not allocate device memory. max_splits is the
 * engine's limit on split-KV partitions per row (a hint: a backend may plan fewer). A model with
 * both attention and MLA layers gets one plan per kind, each into its own buffer (the shape fields
 * and `layout` say which); the paged_decode of a layer receives the plan of its kind. */
typedef struct {
  uint32_t struct_size;
  const int32_t* seq_lens_host; /* host memory [num_rows] */
  int32_t num_rows;
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t v_dim;
  int32_t block_size;
  int32_t cache_dtype; /* kvcheck_dtype */
  int32_t max_splits;
  kvcheck_tensor plan; /* u8 [plan_bytes], device memory */
  int32_t layout;      /* kvcheck_kv_layout of the layers this plan serves (MLA: mla_latent) */
  int32_t max_blocks_per_seq; /* row length of paged_decode's block table, fixed for the run */
} kvcheck_decode_plan_args;

/* What a plan buffer or a workspace must hold: the largest call it serves (plan_bytes,
 * workspace_bytes). paged_decode's plan and workspace are sized once per run with the run's limits
 * and kept at one address (graphs replay against them), so a backend that keeps per-step metadata
 * there (page lists in CSR form, a scheduler's work lists) sizes it from these fields; the other
 * ops' workspaces are sized per call with that call's figures. */
typedef struct {
  uint32_t struct_size;
  int32_t op;                 /* kvcheck_op the bytes are for */
  int32_t max_rows;           /* query rows of a call (decode: one per sequence) */
  int32_t max_seqs;           /* sequences of a call */
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t v_dim;
  int32_t block_size;
  int32_t max_blocks_per_seq; /* row length of the call's block table */
  int32_t cache_dtype;        /* kvcheck_dtype */
  int32_t layout;             /* kvcheck_kv_layout */
  int32_t max_splits;         /* paged_decode: the engine's split-KV limit; else 1 */
} kvcheck_size_query;

/* gather_kv: copy each sequence's cached context (its first ctx_lens[s] tokens) out of the paged
 * cache into contiguous float32 rows: token t of sequence s goes to row ctx_starts[s] + t of
 * k_out / v_out [total][num_kv_heads][head_dim], dequantised. v_out absent (MLA): K only. */
typedef struct {
  uint32_t struct_size;
  kvcheck_paged_kv cache;
  kvcheck_tensor block_table; /* i32 [num_seqs][max_blocks_per_seq] */
  kvcheck_tensor ctx_lens;    /* i32 [num_seqs] */
  kvcheck_tensor ctx_starts;  /* i32 [num_seqs + 1] */
  kvcheck_tensor k_out;
  kvcheck_tensor v_out;
  int32_t num_seqs;
} kvcheck_gather_kv_args;

/* varlen_attention: attention of query rows over contiguous K/V, per sequence s: queries
 * [q_starts[s], q_starts[s+1]) over keys [k_starts[s], k_starts[s+1]); causal: query j sees keys
 * 0..j (new tokens, q_len == k_len), else all of them (context). Writes out and lse for every query
 * row; a row that sees no key gets the declared empty-row convention. K/V are float32 rows; when
 * kv_dtype is not f32 every element is used as the cache would store it (rounded through kv_dtype
 * with k_scale / v_scale), so new tokens attend in the cache's precision. */
typedef struct {
  uint32_t struct_size;
  kvcheck_tensor q;        /* [rows][num_q_heads][head_dim] */
  kvcheck_tensor k;        /* f32 [keys][num_kv_heads][head_dim] */
  kvcheck_tensor v;        /* f32 [keys][num_kv_heads][head_dim] (MLA: the same rows as k) */
  kvcheck_tensor q_starts; /* i32 [num_seqs + 1] */
  kvcheck_tensor k_starts; /* i32 [num_seqs + 1] */
  kvcheck_tensor out;      /* [rows][num_q_heads][v_dim] */
  kvcheck_tensor lse;      /* f32 [rows][num_q_heads] */
  int32_t num_seqs;
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t v_dim;
  float scale;
  int32_t causal;
  int32_t kv_dtype; /* kvcheck_dtype */
  float k_scale;
  float v_scale;
  int32_t max_q_len; /* the longest sequence's query rows / keys: for a grid sized on the host */
  int32_t max_k_len;
  /* Added in v1 (check struct_size): scratch of workspace_bytes(KVCHECK_OP_VARLEN_ATTENTION)
   * bytes for this call's figures (NULL data if 0), and q_starts / k_starts in host memory, valid
   * during the call, for a backend whose planner runs on the host (kvcheck never captures a step
   * with prefill rows into a graph). */
  kvcheck_tensor workspace; /* u8 [workspace_bytes] */
  const int32_t* q_starts_host; /* host memory [num_seqs + 1] */
  const int32_t* k_starts_host; /* host memory [num_seqs + 1] */
} kvcheck_varlen_attention_args;

/* merge_states: rows [0, num_merge) combine state a (context) and state b (new tokens) by their
 * lse; rows [num_merge, num_rows) copy b. Merging two empty states gives o = 0 and the empty lse,
 * never NaN. lse_out optional. All lse in the backend's declared base. */
typedef struct {
  uint32_t struct_size;
  kvcheck_tensor out_a; /* [num_rows][num_heads][head_dim] */
  kvcheck_tensor lse_a; /* f32 [num_rows][num_heads] */
  kvcheck_tensor out_b;
  kvcheck_tensor lse_b;
  kvcheck_tensor out;
  kvcheck_tensor lse_out;
  int32_t num_rows;
  int32_t num_merge;
  int32_t num_heads;
  int32_t head_dim;
} kvcheck_merge_states_args;

typedef enum {
  KVCHECK_FILL_ZERO = 0,
  KVCHECK_FILL_NAN = 1,
  KVCHECK_FILL_INF = 2,
  KVCHECK_FILL_RANDOM_BITS = 3,
} kvcheck_fill_pattern;

/* fill_blocks: fill whole blocks (K and V pages) with a pattern: zero newly allocated blocks, or
 * poison freed ones (NaN / Inf as float32 words, random bits from `seed`). Zero must be exact
 * zeros; the poison patterns need not match kvcheck's bytes, only be NaN/Inf or random. Over an
 * MLA latent cache (v.data == k.data) the page is filled once. Only called on a backend that
 * declares it; otherwise kvcheck fills the bytes itself. */
typedef struct {
  uint32_t struct_size;
  kvcheck_paged_kv cache;
  kvcheck_tensor block_ids; /* i32 [num_ids] */
  int32_t num_ids;
  int32_t pattern; /* kvcheck_fill_pattern */
  uint64_t seed;
} kvcheck_fill_blocks_args;

/* linear_attention: gated linear attention over sequences, per head with D = head_dim:
 *   S = has_initial_state[s] ? state of block state_blocks[s] : 0          (S is [D key][D value])
 *   per row t:  g = 1 / (1 + exp(-gate[t][h]));  S = g S + k_t v_t^T;  out_t = scale * q_t S
 *   the final S is stored back into the block.
 * state: float32 [num_blocks][num_heads][D][D] with element strides, blocks of the shared pool.
 * A sequence whose state block is negative (a padded row) reads and writes nothing. */
typedef struct {
  uint32_t struct_size;
  kvcheck_tensor state;
  kvcheck_tensor q;     /* f32 [rows][num_heads][head_dim] */
  kvcheck_tensor k;
  kvcheck_tensor v;
  kvcheck_tensor gate;  /* f32 [rows][num_heads] */
  kvcheck_tensor out;   /* f32 [rows][num_heads][head_dim] */
  kvcheck_tensor seq_starts;        /* i32 [num_seqs + 1] */
  kvcheck_tensor state_blocks;      /* i32 [num_seqs] */
  kvcheck_tensor has_initial_state; /* i32 [num_seqs] */
  int32_t num_seqs;
  int32_t num_heads;
  int32_t head_dim;
  float scale;
} kvcheck_linear_attention_args;

/* quant_fp8: dynamic per-tensor fp8 e4m3 quantise-dequantise of rows [0, num_rows) of x into y
 * (y may alias x). scale = amax / 448, amax over the rows [0, amax_rows) only — amax_rows is read
 * from device memory (a graph replay sees the step's value), or is amax_rows_fixed when that
 * tensor's data is NULL. amax propagates NaN. scale_out (optional) receives the scale. */
typedef struct {
  uint32_t struct_size;
  kvcheck_tensor x;         /* f32 [num_rows][cols] */
  kvcheck_tensor y;
  kvcheck_tensor amax_rows; /* i32 [1], optional */
  int32_t amax_rows_fixed;
  int32_t num_rows;
  int32_t cols;
  kvcheck_tensor scale_out; /* f32 [1], optional */
} kvcheck_quant_fp8_args;

/* paged_prefill (optional, fused): the prefill rows of the step attend to their sequence's cached
 * context (from the paged cache) and causally to themselves, in one op; it replaces kvcheck's
 * gather_kv -> varlen_attention -> merge_states chain. Sequence s has ctx_lens[s] cached tokens and
 * q_starts[s+1] - q_starts[s] new ones, whose K/V are already in the cache (write_kv ran first), at
 * positions ctx_lens[s] ... of its block table. lse optional. q_starts_host / ctx_lens_host are the
 * same values in host memory, valid during the call, for a backend whose planner runs on the host
 * (kvcheck never captures a step with prefill rows into a graph). */
typedef struct {
  uint32_t struct_size;
  kvcheck_paged_kv cache;
  kvcheck_tensor q;           /* [rows][num_q_heads][head_dim] */
  kvcheck_tensor out;         /* [rows][num_q_heads][v_dim] */
  kvcheck_tensor lse;         /* f32 [rows][num_q_heads], optional */
  kvcheck_tensor q_starts;    /* i32 [num_seqs + 1] */
  kvcheck_tensor ctx_lens;    /* i32 [num_seqs] */
  kvcheck_tensor block_table; /* i32 [num_seqs][max_blocks_per_seq] */
  kvcheck_tensor workspace;   /* u8 [workspace_bytes] */
  int32_t num_seqs;
  int32_t num_q_heads;
  int32_t v_dim;
  float scale;
  int32_t max_q_len;   /* the longest sequence's new tokens, and its cached context */
  int32_t max_ctx_len;
  const int32_t* q_starts_host; /* host memory [num_seqs + 1] */
  const int32_t* ctx_lens_host; /* host memory [num_seqs] */
} kvcheck_paged_prefill_args;

/* ---- capabilities and conventions ---------------------------------------------------------- */

typedef enum {
  KVCHECK_OP_WRITE_KV = 0,
  KVCHECK_OP_PAGED_DECODE = 1,
  KVCHECK_OP_GATHER_KV = 2,
  KVCHECK_OP_VARLEN_ATTENTION = 3,
  KVCHECK_OP_MERGE_STATES = 4,
  KVCHECK_OP_LINEAR_ATTENTION = 5,
  KVCHECK_OP_FILL_BLOCKS = 6,
  KVCHECK_OP_QUANT_FP8 = 7,
  KVCHECK_OP_PAGED_PREFILL = 8,
  KVCHECK_NUM_OPS = 9,
} kvcheck_op;

typedef enum { KVCHECK_LSE_NATURAL = 0, KVCHECK_LSE_BASE2 = 1 } kvcheck_lse_base;

typedef enum {
  KVCHECK_GRAPHS_NONE = 0,   /* never capture this backend's ops: every step runs eagerly */
  KVCHECK_GRAPHS_DECODE = 1, /* decode-only steps may be captured and replayed */
  KVCHECK_GRAPHS_FULL = 2,
} kvcheck_graph_support;

/* What the backend accepts (a zero mask or a NULL list means "any") and the conventions its ops
 * follow. kvcheck checks the scenario against it before running: an op the backend implements but
 * whose caps cannot take the scenario is "cannot run" (exit 3), naming the op and the capability,
 * unless the user allows fallback to the built-in op (--allow-fallback). */
typedef struct {
  uint32_t struct_size;
  uint32_t cache_dtypes;  /* KVCHECK_DTYPE_BIT mask of cache dtypes */
  uint32_t layouts;       /* KVCHECK_LAYOUT_BIT mask */
  int32_t io_dtype;       /* q and out of the attention ops: KVCHECK_F32, _BF16 or _F16 */
  const int32_t* head_dims;   /* cache head_dim values accepted, or NULL */
  int32_t num_head_dims;
  const int32_t* block_sizes; /* or NULL */
  int32_t num_block_sizes;
  int32_t lse_base;           /* kvcheck_lse_base of every lse it reads or writes */
  float empty_row_lse;        /* lse of a row that attended nothing: -INFINITY or +INFINITY */
  int32_t pad_seq_len;        /* seq_len of graph-padded decode rows: 0 or 1 */
  int32_t pad_block_id;       /* block-table entry of padded rows and unused entries: 0 or -1 */
  int32_t needs_zeroed_blocks; /* 1: kvcheck must zero every newly allocated block */
  int32_t graph_support;      /* kvcheck_graph_support */
  /* Query heads per KV head of attention layers (separate or interleaved K/V) accepted, or NULL;
   * MLA layers (one latent head) are not asked. */
  const int32_t* gqa_ratios;
  int32_t num_gqa_ratios;
  /* MLA latent caches accepted, as (kv_lora_rank, qk_rope_dim) pairs: mla_dims[2 i], mla_dims[2 i
   * + 1] for i < num_mla_dims; or NULL. The latent row is their sum (what head_dims is asked of
   * attention layers is not asked of MLA layers when this is given). */
  const int32_t* mla_dims;
  int32_t num_mla_dims;
  int64_t reserved[8];
} kvcheck_caps;

/* ---- the backend ---------------------------------------------------------------------------- */

/* What kvcheck gives the backend at init. */
typedef struct {
  uint32_t struct_size;
  uint32_t abi_version;   /* the version kvcheck speaks: the same as init's argument */
  DLDevice device;        /* kDLCPU or kDLCUDA (device_id: the GPU kvcheck runs on) */
  const char* options;    /* --backend-option text, or "" */
  /* Optional log sink (level 0 debug, 1 info, 2 warning); may be NULL. */
  void (*log)(void* log_ctx, int32_t level, const char* message);
  void* log_ctx;
} kvcheck_host;

/* The op table. A NULL op is one the backend does not implement: it runs on kvcheck's built-in
 * device, never silently in place of a declared one. */
typedef struct kvcheck_backend {
  uint32_t struct_size;
  uint32_t abi_version;
  const char* name;    /* short, e.g. "flashinfer" */
  const char* version; /* the backend's own version, e.g. its library's and its git commit */
  void* self;          /* passed back to every call */
  kvcheck_caps caps;

  int32_t (*write_kv)(void* self, const kvcheck_write_kv_args* a, void* stream, char* err,
                      size_t err_size);
  int32_t (*paged_decode)(void* self, const kvcheck_paged_decode_args* a, void* stream, char* err,
                          size_t err_size);
  int32_t (*gather_kv)(void* self, const kvcheck_gather_kv_args* a, void* stream, char* err,
                       size_t err_size);
  int32_t (*varlen_attention)(void* self, const kvcheck_varlen_attention_args* a, void* stream,
                              char* err, size_t err_size);
  int32_t (*merge_states)(void* self, const kvcheck_merge_states_args* a, void* stream, char* err,
                          size_t err_size);
  int32_t (*linear_attention)(void* self, const kvcheck_linear_attention_args* a, void* stream,
                              char* err, size_t err_size);
  int32_t (*fill_blocks)(void* self, const kvcheck_fill_blocks_args* a, void* stream, char* err,
                         size_t err_size);
  int32_t (*quant_fp8)(void* self, const kvcheck_quant_fp8_args* a, void* stream, char* err,
                       size_t err_size);
  int32_t (*paged_prefill)(void* self, const kvcheck_paged_prefill_args* a, void* stream,
                           char* err, size_t err_size);

  /* Optional: the decode plan step (above), and the bytes of its persistent plan buffer for the
   * run's decode steps (q->op is KVCHECK_OP_PAGED_DECODE; one query per layer kind). */
  int32_t (*paged_decode_plan)(void* self, const kvcheck_decode_plan_args* a, void* stream,
                               char* err, size_t err_size);
  size_t (*plan_bytes)(void* self, const kvcheck_size_query* q);
  /* Optional: scratch bytes q->op needs for calls within q (0 if NULL). */
  size_t (*workspace_bytes)(void* self, const kvcheck_size_query* q);

  /* Called once, last; may be NULL. */
  void (*destroy)(void* self);
} kvcheck_backend;

/* The one exported symbol. Returns the backend's table (valid until destroy), or NULL with a
 * message in err: an ABI version it cannot serve, a device it does not run on, bad options. */
typedef const kvcheck_backend* (*kvcheck_backend_init_fn)(uint32_t abi_version,
                                                          const kvcheck_host* host, char* err,
                                                          size_t err_size);

#if defined(_WIN32)
#define KVCHECK_BACKEND_EXPORT __declspec(dllexport)
#else
#define KVCHECK_BACKEND_EXPORT __attribute__((visibility("default")))
#endif

KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(uint32_t abi_version,
                                                                   const kvcheck_host* host,
                                                                   char* err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* KVCHECK_BACKEND_H */
