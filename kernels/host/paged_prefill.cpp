// paged_prefill.cpp — host op: the fused paged prefill (op_args.cuh: PagedPrefillArgs), the spec a
// backend's fused op is held to (`kvcheck conform`). Composed of the host ops over the paged cache:
// every sequence's cached and new tokens gathered from the cache (write_kv stored the new ones
// first), attention over the context and causal attention over the new tokens, merged by their lse
// where a sequence has context, so it computes what kvcheck's own gather -> varlen -> merge chain
// computes, bit for bit. kvcheck's devices run that chain; this op serves the checks and plugins.
#include <stdexcept>
#include <vector>

#include "kernels/host/host_ops.h"

namespace kv::host {
namespace {

// Rows [first, first + n) of a packed [rows][width] buffer appended to `to`.
void append_rows(std::vector<float>& to, const std::vector<float>& from, int64_t first, int64_t n,
                 int64_t width) {
  to.insert(to.end(), from.begin() + first * width, from.begin() + (first + n) * width);
}

}  // namespace

void paged_prefill(const PagedPrefillArgs& a) {
  const PagedKv& c = a.cache;
  const int32_t S = a.num_seqs, H = a.num_q_heads, hd = c.head_dim;
  const int32_t vd = a.v_dim > 0 ? a.v_dim : hd;
  const int64_t out_width = static_cast<int64_t>(H) * vd;
  if (S < 0 || H < 1 || a.out_row_stride < out_width)
    throw std::invalid_argument("paged_prefill: num_seqs, num_q_heads or out_row_stride");
  const bool latent = c.v == c.k;  // MLA: V is the first v_dim features of the latent K
  const int64_t width = static_cast<int64_t>(c.num_kv_heads) * hd;
  std::vector<int32_t> all_lens(S), all_starts{0}, ctx_starts{0};
  for (int32_t s = 0; s < S; ++s) {
    all_lens[s] = a.ctx_lens[s] + a.q_starts[s + 1] - a.q_starts[s];
    all_starts.push_back(all_starts.back() + all_lens[s]);
    ctx_starts.push_back(ctx_starts.back() + a.ctx_lens[s]);
  }
  std::vector<float> k_all(static_cast<size_t>(all_starts.back() * width));
  std::vector<float> v_all(latent ? 0 : k_all.size());
  gather_kv({.cache = c, .block_table = a.block_table, .block_table_stride = a.block_table_stride,
             .ctx_lens = all_lens.data(), .ctx_starts = all_starts.data(), .k_out = k_all.data(),
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
  const int32_t rows = S > 0 ? a.q_starts[S] : 0;
  std::vector<float> o_ctx(static_cast<size_t>(rows * out_width) + 1);
  std::vector<float> l_ctx(static_cast<size_t>(rows) * H + 1);
  std::vector<float> o_new(o_ctx.size()), l_new(l_ctx.size());
  auto varlen = [&](const std::vector<float>& k, const std::vector<float>& v,
                    const int32_t* k_starts, float* out, float* lse, bool causal) {
    varlen_attention({.q = a.q, .q_row_stride = a.q_row_stride, .k = k.data(),
                      .v = latent ? k.data() : v.data(), .kv_row_stride = width,
                      .q_starts = a.q_starts, .k_starts = k_starts, .out = out,
                      .out_row_stride = out_width, .lse = lse, .num_seqs = S, .num_rows = rows,
                      .num_keys = k_starts[S], .num_q_heads = H,
                      .num_kv_heads = c.num_kv_heads, .head_dim = hd, .v_dim = vd,
                      .scale = a.scale, .causal = causal});
  };
  varlen(k_ctx, v_ctx, ctx_starts.data(), o_ctx.data(), l_ctx.data(), false);
  varlen(k_new, v_new, a.q_starts, o_new.data(), l_new.data(), true);
  // Per sequence: its rows merged when it has context, else the new-token state copied. The
  // merge's one row stride is out's: the partial states are laid out at it too.
  std::vector<float> oa(static_cast<size_t>(rows) * a.out_row_stride + 1), ob(oa.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < out_width; ++i) {
      oa[r * a.out_row_stride + i] = o_ctx[r * out_width + i];
      ob[r * a.out_row_stride + i] = o_new[r * out_width + i];
    }
  for (int32_t s = 0; s < S; ++s) {
    const int64_t r0 = a.q_starts[s], n = a.q_starts[s + 1] - a.q_starts[s];
    merge_states({.out_a = oa.data() + r0 * a.out_row_stride, .lse_a = l_ctx.data() + r0 * H,
                  .out_b = ob.data() + r0 * a.out_row_stride, .lse_b = l_new.data() + r0 * H,
                  .out = a.out + r0 * a.out_row_stride,
                  .lse = a.lse ? a.lse + r0 * H : nullptr, .row_stride = a.out_row_stride,
                  .num_rows = static_cast<int32_t>(n),
                  .num_merge = a.ctx_lens[s] > 0 ? static_cast<int32_t>(n) : 0, .num_heads = H,
                  .head_dim = vd});
  }
}

}  // namespace kv::host
