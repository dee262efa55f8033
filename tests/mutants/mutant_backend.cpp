// mutant_backend.cpp — mutant backend plugins: kvcheck's host ops behind the plugin ABI, each
// build with one realistic backend bug switched on (-DKV_MUTANT_<NAME>), so that ctest can prove
// the backend suite catches the bug and names the op (tests/mutants/run_mutant.py). Built without
// a switch it is a clean plugin, "mutant-clean", which must meet every expectation.
//
// The backend suite is the default suite run with --clean-twins: each scenario with regressions
// on also runs as "<name>.clean", expecting clean. Most bugs show on smoke.json; those confined to
// MLA (decode_mla_v_offset), fp8 caches (write_kv_fp8_scale_inverted), the interleaved layout
// (write_kv_assumes_contiguous) or linear attention (linear_attention_stale_state) only show on
// the seeds' clean twins, since every original with those shapes expects "corrupt" anyway. Where
// each is caught: the comments of tests/mutants/CMakeLists.txt's list.
//
// Each op converts its ABI args back into kvcheck's descriptor and runs the kv::host op, through
// the table backends/builtin/host_backend.cpp has (builtin_table.h); a mutant bends the
// descriptor before the op, the
// result after it, or replaces the op by a buggy composition of host ops. One `#if` per bug, each
// with the one-line story of the real bug it models. No exception leaves an op.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "backends/builtin/builtin_table.h"
#include "kernels/attn_state.cuh"
#include "kernels/decode_splits.h"
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"

#ifndef KV_MUTANT_NAME
#define KV_MUTANT_NAME "mutant-clean"
#endif

namespace {

using namespace kv;

// Counts the calls of one op, so that a mutant can misbehave from some step on.
[[maybe_unused]] int64_t next_call(std::atomic<int64_t>& calls) { return calls.fetch_add(1); }

namespace mutant {

// ---- write_kv ------------------------------------------------------------------------------

std::string write_kv(const WriteKvArgs& in) {
  WriteKvArgs d = in;
#if defined(KV_MUTANT_WRITE_KV_V_AS_K_LAST_HEAD)
  // A fused K/V store kernel whose head loop indexes the V source for the last K head: the last
  // kv head's K page receives V.
  std::vector<float> k;
  if (d.v != nullptr && d.num_tokens > 0) {
    const int64_t hd = d.cache.head_dim, last = (d.cache.num_kv_heads - 1) * hd;
    k.assign(d.k, d.k + (d.num_tokens - 1) * d.k_row_stride + d.cache.num_kv_heads * hd);
    for (int64_t t = 0; t < d.num_tokens; ++t)
      std::copy_n(d.v + t * d.v_row_stride + last, hd, k.data() + t * d.k_row_stride + last);
    d.k = k.data();
  }
#elif defined(KV_MUTANT_WRITE_KV_ASSUMES_CONTIGUOUS)
  // The store kernel computes slot addresses from the shape (a dense [block][entry][head][dim]
  // page per block), ignoring the cache's strides: right on the plain layout, wrong blocks and
  // V pages on the interleaved one ([K0][V0][K1][V1]..., hybrid pools).
  d.cache = with_shape_strides(d.cache);
#elif defined(KV_MUTANT_WRITE_KV_FP8_SCALE_INVERTED)
  // The fp8 store multiplies by the per-tensor scale where it must divide (the scale and its
  // inverse mixed up at the quantising call); the 16-bit paths pass no scale and stay right.
  if (d.cache.dtype == DType::fp8_e4m3) {
    d.cache.k_scale = 1.0f / d.cache.k_scale;
    d.cache.v_scale = 1.0f / d.cache.v_scale;
  }
#endif
  host::write_kv(d);
  return "";
}

// ---- paged_decode and its plan step ----------------------------------------------------------


// The decode as it runs when query head h reads kv head h % num_kv_heads (the GQA mutant): the
// host op (which reads h / group) over q heads permuted into the slot whose group is h % nkv.
[[maybe_unused]] void decode_gqa_modulo(const PagedDecodeArgs& in, float* lse) {
  PagedDecodeArgs d = in;
  const int32_t nq = d.num_q_heads, nkv = d.cache.num_kv_heads, group = nq / nkv;
  const int32_t hd = d.cache.head_dim, vd = d.v_dim == 0 ? hd : d.v_dim;
  auto slot = [&](int32_t h) { return (h % nkv) * group + h / nkv; };
  std::vector<float> q(d.num_rows * d.q_row_stride), out(d.num_rows * d.out_row_stride);
  for (int64_t r = 0; r < d.num_rows; ++r)
    for (int32_t h = 0; h < nq; ++h) {
      std::copy_n(in.q + r * d.q_row_stride + h * hd, hd, &q[r * d.q_row_stride + slot(h) * hd]);
      std::copy_n(in.out + r * d.out_row_stride + h * vd, vd,
                  &out[r * d.out_row_stride + slot(h) * vd]);
    }
  d.q = q.data();
  d.out = out.data();
  host::paged_decode(d);
  std::vector<float> l(static_cast<size_t>(d.num_rows) * nq, -INFINITY);
  builtin_plugin::host_decode_lse(d, l.data());
  for (int64_t r = 0; r < d.num_rows; ++r) {
    if (d.seq_lens[r] <= 0) continue;
    for (int32_t h = 0; h < nq; ++h) {
      std::copy_n(&out[r * d.out_row_stride + slot(h) * vd], vd,
                  in.out + r * d.out_row_stride + h * vd);
      if (lse) lse[r * nq + h] = l[r * nq + slot(h)];
    }
  }
}

std::string paged_decode(const PagedDecodeArgs& in, float* lse, void*) {
  PagedDecodeArgs d = in;
  std::vector<int32_t> lens(d.seq_lens, d.seq_lens + d.num_rows);
#if defined(KV_MUTANT_DECODE_TAIL_NOT_MASKED)
  // The last block's tile is not masked at seq_len: the kernel attends to every entry of it, as
  // if seq_len were rounded up to the block size (the unwritten tail joins the softmax).
  const int32_t bs = d.cache.block_size;
  for (int32_t& n : lens) n = n > 0 ? (n + bs - 1) / bs * bs : 0;
#elif defined(KV_MUTANT_DECODE_DROPS_CURRENT_TOKEN)
  // seq_lens taken as the context length before this step's token (seq_len - 1): the token
  // write_kv just stored is left out of its own attention.
  for (int32_t& n : lens) n = n > 0 ? n - 1 : 0;
#elif defined(KV_MUTANT_DECODE_SCALE_IGNORED)
  // The softmax scale is dropped (a kernel template instantiated with scale 1, as when the
  // caller's scale is assumed folded into q).
  d.scale = 1.0f;
#elif defined(KV_MUTANT_DECODE_MLA_V_OFFSET)
  // Over the latent cache (V = the first v_dim features of each K row) the kernel takes V from
  // the row's last v_dim features instead, as if the rope part came first: MLA only.
  if (d.cache.v == d.cache.k && d.v_dim > 0 && d.v_dim < d.cache.head_dim)
    d.cache.v = static_cast<char*>(d.cache.v) +
                static_cast<int64_t>(d.cache.head_dim - d.v_dim) * dtype_size(d.cache.dtype);
#endif
  d.seq_lens = lens.data();
#if defined(KV_MUTANT_DECODE_GQA_MODULO)
  // GQA head mapping wrong: query head h reads kv head h % num_kv_heads, not h / group.
  decode_gqa_modulo(d, lse);
  return "";
#endif
  host::paged_decode(d);
  if (lse) builtin_plugin::host_decode_lse(d, lse);
  return "";
}

std::string store_plan(const std::vector<int32_t>& plan, const DecodePlanArgs& d, void*) {
  int32_t* dst = d.plan;
#if defined(KV_MUTANT_PLAN_NOT_PERSISTENT)
  // vLLM PR 35175's bug in the backend: after the first step the plan goes into a buffer of the
  // backend's own, while paged_decode (and the graph that captured it) reads the caller's one.
  static std::atomic<int64_t> calls{0};
  static std::vector<int32_t> own(decode_plan_bytes(4096) / sizeof(int32_t));
  if (next_call(calls) > 0 && plan.size() <= own.size()) dst = own.data();
#endif
  memcpy(dst, plan.data(), plan.size() * sizeof(int32_t));  // host memory on the host
  return "";
}

// ---- gather_kv -----------------------------------------------------------------------------

std::string gather_kv(const GatherKvArgs& in) {
  GatherKvArgs d = in;
#if defined(KV_MUTANT_GATHER_DROPS_PARTIAL_BLOCK)
  // Blocks to copy counted as ctx_len / block_size (floor, not ceil): the tokens of a partly
  // filled last block are never copied out.
  std::vector<int32_t> lens(d.ctx_lens, d.ctx_lens + d.num_seqs);
  for (int32_t& n : lens) n = n / d.cache.block_size * d.cache.block_size;
  d.ctx_lens = lens.data();
#endif
  host::gather_kv(d);
  return "";
}

// ---- varlen_attention ----------------------------------------------------------------------

std::string varlen_attention(const VarlenAttnArgs& in) {
  VarlenAttnArgs d = in;
#if defined(KV_MUTANT_VARLEN_KEY_LIMIT)
  // A kernel with a fixed 64-key tile returns an error status for longer sequences, though its
  // caps declare no such limit.
  for (int32_t s = 0; s < d.num_seqs; ++s)
    if (d.k_starts[s + 1] - d.k_starts[s] > 64)
      return "varlen_attention: " + std::to_string(d.k_starts[s + 1] - d.k_starts[s]) +
             " keys in one sequence, this kernel's tile takes 64";
#endif
#if defined(KV_MUTANT_VARLEN_CAUSAL_LOOKAHEAD)
  // Causal mask off by one (`key <= query + 1`): each new token also sees the next one. Run as
  // one non-causal call per query row over the keys it (wrongly) sees.
  if (d.causal) {
    for (int32_t s = 0; s < d.num_seqs; ++s) {
      const int32_t q0 = in.q_starts[s], k0 = in.k_starts[s];
      const int32_t k_len = in.k_starts[s + 1] - k0;
      for (int32_t j = 0; q0 + j < in.q_starts[s + 1]; ++j) {
        const int32_t qs[2] = {q0 + j, q0 + j + 1};
        const int32_t ks[2] = {k0, k0 + std::min(j + 2, k_len)};
        VarlenAttnArgs one = in;
        one.num_seqs = 1;
        one.q_starts = qs;
        one.k_starts = ks;
        one.causal = false;
        host::varlen_attention(one);
      }
    }
    return "";
  }
#endif
  host::varlen_attention(d);
#if defined(KV_MUTANT_VARLEN_LSE_BASE2)
  // The kernel keeps its softmax in exp2 and returns lse in base 2, while the caps declare the
  // natural log (the FlashInfer / FlashAttention convention mix-up).
  const int64_t rows = d.q_starts[d.num_seqs];  // from_abi leaves num_rows 0: read the array
  for (int64_t i = 0; i < rows * d.num_q_heads; ++i)
    d.lse[i] *= static_cast<float>(M_LOG2E);
#endif
  return "";
}

// ---- merge_states --------------------------------------------------------------------------

std::string merge_states(const MergeStatesArgs& in) {
#if defined(KV_MUTANT_MERGE_HANG)
  // A reduction that spins on a completion flag no producer ever sets (a missed signal): from
  // the ninth call on, the first call with merged rows never returns.
  static std::atomic<int64_t> calls{0};
  static std::atomic<bool> done{false};
  if (next_call(calls) >= 8 && in.num_merge > 0)
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
#endif
#if defined(KV_MUTANT_MERGE_WEIGHTS_SWAPPED)
  // The merge applies context's weight to the new tokens' output and vice versa (out_a and out_b
  // swapped at the kernel's call site); rows that only copy b stay right.
  MergeStatesArgs merged = in;
  merged.out_a = in.out_b;
  merged.out_b = in.out_a;
  merged.num_rows = in.num_merge;
  host::merge_states(merged);
  MergeStatesArgs copied = in;
  const int64_t skip = in.num_merge * in.row_stride, skip_lse = in.num_merge * in.num_heads;
  copied.out_a += skip;
  copied.out_b += skip;
  copied.out += skip;
  copied.lse_a += skip_lse;
  copied.lse_b += skip_lse;
  if (copied.lse) copied.lse += skip_lse;
  copied.num_rows = in.num_rows - in.num_merge;
  copied.num_merge = 0;
  host::merge_states(copied);
  return "";
#endif
  host::merge_states(in);
  return "";
}

// ---- linear_attention, fill_blocks, quant_fp8 ------------------------------------------------

std::string linear_attention(const LinearAttnArgs& in) {
#if defined(KV_MUTANT_LINEAR_ATTENTION_CRASH)
  // The state of a sequence is addressed through a stale state-table pointer from the third call
  // on: a wild read on the host, SIGSEGV.
  static std::atomic<int64_t> calls{0};
  if (next_call(calls) >= 2) {
    float* volatile wild = nullptr;
    if (in.num_seqs > 0) in.out[0] = *wild;
  }
#endif
#if defined(KV_MUTANT_LINEAR_ATTENTION_STALE_STATE)
  // has_initial_state ignored: a new sequence starts from whatever its state block holds (the
  // previous owner's state, or a KV page's bytes in a hybrid pool) instead of from zero.
  LinearAttnArgs d = in;
  const std::vector<int32_t> carry(static_cast<size_t>(std::max(in.num_seqs, 0)), 1);
  d.has_initial_state = carry.data();
  host::linear_attention(d);
  return "";
#endif
  host::linear_attention(in);
  return "";
}

std::string fill_blocks(const FillBlocksArgs& d) {
#if defined(KV_MUTANT_FILL_BLOCKS_ABORTS_ON_POISON)
  // A fill kernel written for zeroing only: its pattern check aborts the process on the poison
  // patterns kvcheck's fault injection uses (TORCH_CHECK-style, SIGABRT).
  if (d.pattern != FillPattern::zero) std::abort();
#elif defined(KV_MUTANT_FILL_BLOCKS_ZERO_NOOP)
  // The zeroing launch is skipped (an early return meant for "already zero" pools): blocks asked
  // to be zeroed keep their old bytes; poison fills still run.
  if (d.pattern == FillPattern::zero) return "";
#endif
  host::fill_blocks(d);
  return "";
}

std::string quant_fp8(const QuantFp8Args& in) {
  QuantFp8Args d = in;
#if defined(KV_MUTANT_QUANT_AMAX_ALL_ROWS)
  // amax reduced over every row of the (graph-padded) batch, not the amax_rows real ones: padded
  // rows' garbage sets the scale.
  d.amax_rows = nullptr;
  d.amax_rows_fixed = d.num_rows;
#endif
  host::quant_fp8(d);
  return "";
}

}  // namespace mutant

// ---- the plugin ----------------------------------------------------------------------------

struct MutantOps : builtin_plugin::HostRun {
  static constexpr const char* kName = KV_MUTANT_NAME;
  static constexpr DLDeviceType kRunsOn = kDLCPU;
  static constexpr const char* kElsewhere = "a test plugin of the host ops";
  static std::string version() { return "kvcheck tests/mutants"; }
  static void* self() { return nullptr; }

  KV_BUILTIN_OP_FUNCTIONS(mutant)
  static constexpr auto paged_decode = mutant::paged_decode;
  static constexpr auto store_plan = mutant::store_plan;
};

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  return kv::builtin_plugin::init<MutantOps>(abi_version, host, err, err_size);
}
