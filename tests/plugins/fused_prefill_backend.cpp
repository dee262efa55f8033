// fused_prefill_backend.cpp — a host plugin with the fused paged_prefill, so that the tests can
// drive the engine's fused path (the engine calls paged_prefill instead of its gather ->
// varlen -> merge chain when a backend has it). Everything else is kvcheck's host plugin
// (host_backend.cpp compiled in with its entry point renamed); paged_prefill is composed of the
// host ops over the paged cache: every sequence's cached and new tokens gathered from the cache
// (write_kv stored the new ones first), attention over the context and causal attention over the
// new tokens, merged by their lse where a sequence has context. Built as libkvtest_fused.so.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "backends/builtin/builtin_plugin.h"
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"

extern "C" const kvcheck_backend* kvcheck_host_backend_init(uint32_t, const kvcheck_host*, char*,
                                                            size_t);

namespace {

using namespace kv;

// Rows [from, from + n) of a packed [rows][width] buffer appended to `to`.
void append_rows(std::vector<float>& to, const std::vector<float>& from, int64_t first, int64_t n,
                 int64_t width) {
  to.insert(to.end(), from.begin() + first * width, from.begin() + (first + n) * width);
}

std::string fused_prefill(const PagedPrefillArgs& a) {
  const PagedKv& c = a.cache;
  const int32_t S = a.num_seqs, H = a.num_q_heads, hd = c.head_dim;
  const int32_t vd = a.v_dim > 0 ? a.v_dim : hd;
  const bool latent = c.v == c.k;  // MLA: V is the first v_dim features of the latent K
  const int64_t width = static_cast<int64_t>(c.num_kv_heads) * hd;
  // Every sequence's tokens, cached and new, as the cache stores them.
  std::vector<int32_t> all_lens(S), all_starts{0}, ctx_starts{0};
  for (int32_t s = 0; s < S; ++s) {
    all_lens[s] = a.ctx_lens[s] + a.q_starts[s + 1] - a.q_starts[s];
    all_starts.push_back(all_starts.back() + all_lens[s]);
    ctx_starts.push_back(ctx_starts.back() + a.ctx_lens[s]);
  }
  std::vector<float> k_all(static_cast<size_t>(all_starts.back() * width));
  std::vector<float> v_all(latent ? 0 : k_all.size());
  host::gather_kv({.cache = c, .block_table = a.block_table,
                   .block_table_stride = a.block_table_stride, .ctx_lens = all_lens.data(),
                   .ctx_starts = all_starts.data(), .k_out = k_all.data(),
                   .v_out = latent ? nullptr : v_all.data(), .num_seqs = S,
                   .total_ctx = all_starts.back()});
  std::vector<float> k_ctx, v_ctx, k_new, v_new;
  for (int32_t s = 0; s < S; ++s) {
    const int64_t ctx = a.ctx_lens[s], fresh = all_lens[s] - ctx;
    append_rows(k_ctx, k_all, all_starts[s], ctx, width);
    append_rows(k_new, k_all, all_starts[s] + ctx, fresh, width);
    if (latent) continue;
    append_rows(v_ctx, v_all, all_starts[s], ctx, width);
    append_rows(v_new, v_all, all_starts[s] + ctx, fresh, width);
  }
  const int32_t rows = a.num_rows;
  const int64_t out_width = static_cast<int64_t>(H) * vd;
  if (a.out_row_stride != out_width)
    return "paged_prefill: this test plugin takes packed out rows only, got row stride " +
           std::to_string(a.out_row_stride);
  std::vector<float> o_ctx(static_cast<size_t>(rows * out_width) + 1), l_ctx(rows * H + 1);
  std::vector<float> o_new(o_ctx.size()), l_new(l_ctx.size());
  auto varlen = [&](const std::vector<float>& k, const std::vector<float>& v,
                    const int32_t* k_starts, float* out, float* lse, bool causal) {
    host::varlen_attention({.q = a.q, .q_row_stride = a.q_row_stride, .k = k.data(),
                            .v = latent ? k.data() : v.data(), .kv_row_stride = width,
                            .q_starts = a.q_starts, .k_starts = k_starts, .out = out,
                            .out_row_stride = out_width, .lse = lse, .num_seqs = S,
                            .num_rows = rows, .num_keys = k_starts[S],
                            .num_q_heads = H, .num_kv_heads = c.num_kv_heads, .head_dim = hd,
                            .v_dim = vd, .scale = a.scale, .causal = causal});
  };
  varlen(k_ctx, v_ctx, ctx_starts.data(), o_ctx.data(), l_ctx.data(), false);
  varlen(k_new, v_new, a.q_starts, o_new.data(), l_new.data(), true);
  for (int32_t s = 0; s < S; ++s) {  // merge the rows of a sequence with context; copy the rest
    const int64_t r0 = a.q_starts[s];
    host::merge_states({.out_a = o_ctx.data() + r0 * out_width, .lse_a = l_ctx.data() + r0 * H,
                        .out_b = o_new.data() + r0 * out_width, .lse_b = l_new.data() + r0 * H,
                        .out = a.out + r0 * a.out_row_stride,
                        .lse = a.lse ? a.lse + r0 * H : nullptr, .row_stride = out_width,
                        .num_rows = a.q_starts[s + 1] - a.q_starts[s],
                        .num_merge = a.ctx_lens[s] > 0 ? a.q_starts[s + 1] - a.q_starts[s] : 0,
                        .num_heads = H, .head_dim = vd});
  }
  return "";
}

int32_t paged_prefill(void*, const kvcheck_paged_prefill_args* a, void*, char* err, size_t n) {
  return builtin_plugin::convert_and_run<PagedPrefillArgs>("paged_prefill", a, err, n,
                                                           fused_prefill);
}

const kvcheck_backend* g_host = nullptr;

kvcheck_backend make_table() {
  kvcheck_backend b = *g_host;
  b.name = "test-fused-prefill";
  b.paged_prefill = paged_prefill;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  g_host = kvcheck_host_backend_init(abi_version, host, err, err_size);
  if (g_host == nullptr) return nullptr;
  static const kvcheck_backend table = make_table();
  return &table;
}
