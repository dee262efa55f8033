// conform_attention.cpp — `kvcheck conform` of the ops on contiguous rows: varlen_attention and
// merge_states (relative L2 per (row, head), lse in the backend's declared base and empty-row
// convention), quant_fp8 (exact) and linear_attention (outputs and stored states, relative L2),
// each against kv::host's op on the same random inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "conform/conform_support.h"
#include "kernels/host/host_ops.h"

namespace kv::conform {

namespace {


// The backend's lse of a natural-log value (its base; -inf is its declared empty-row lse).
float to_backend(const kvcheck_caps& caps, float lse) {
  if (lse == -INFINITY) return caps.empty_row_lse;
  return caps.lse_base == KVCHECK_LSE_BASE2 ? static_cast<float>(lse / std::log(2.0)) : lse;
}

// Compares an lse the backend wrote with the built-in's (natural, -inf empty); "" or why.
std::string compare_lse(const kvcheck_caps& caps, float got, float want, double tol,
                        double* worst) {
  if (want == -INFINITY)
    return got == caps.empty_row_lse ? ""
                                     : fmt::format("empty row: lse {} (declared {})", got,
                                                   caps.empty_row_lse);
  double g = got;
  if (caps.lse_base == KVCHECK_LSE_BASE2) g *= std::log(2.0);
  const double e = std::isfinite(g) ? std::fabs(g - want) / std::max(1.0, std::fabs(1.0 * want))
                                    : std::numeric_limits<double>::infinity();
  if (!(e <= *worst)) *worst = e;
  return e <= tol ? "" : fmt::format("lse {} want {}", g, want);
}

// Out rows [rows][heads][dim] and lse [rows][heads] of a backend against the built-in's.
std::string compare_states(const kvcheck_caps& caps, const std::vector<float>& got,
                           const std::vector<float>& want, const std::vector<float>& got_lse,
                           const std::vector<float>& want_lse, int32_t rows, int32_t heads,
                           int32_t dim, double tol_out, double tol_lse, double* worst) {
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t h = 0; h < heads; ++h) {
      const size_t o = (static_cast<size_t>(r) * heads + h) * dim;
      const double e = rel_l2(got.data() + o, want.data() + o, dim);
      if (!(e <= *worst)) *worst = e;
      if (!(e <= tol_out))
        return fmt::format("row {} head {}: out rel err {}", r, h, fmt_err(e));
      if (got_lse.empty()) continue;
      const size_t l = static_cast<size_t>(r) * heads + h;
      const std::string why = compare_lse(caps, got_lse[l], want_lse[l], tol_lse, worst);
      if (!why.empty()) return fmt::format("row {} head {}: {}", r, h, why);
    }
  }
  return "";
}

// The head dims a merge is handed: the value dims of the layers the backend declares (attention
// head dims, MLA's kv_lora_rank), or 16 and 64 for a backend that takes any.
std::vector<int32_t> merge_dims(const kvcheck_caps& caps) {
  const uint32_t mla_bit = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  const bool mla = caps.layouts == 0 || (caps.layouts & mla_bit) != 0;
  const bool attn = caps.layouts == 0 || (caps.layouts & ~mla_bit) != 0;
  if (caps.head_dims == nullptr && (caps.mla_dims == nullptr || !mla)) return {16, 64};
  std::vector<int32_t> dims;
  for (int32_t i = 0; attn && caps.head_dims && i < caps.num_head_dims; ++i)
    dims.push_back(caps.head_dims[i]);
  for (int32_t i = 0; mla && caps.mla_dims && i < caps.num_mla_dims; ++i)
    dims.push_back(caps.mla_dims[2 * i]);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims.empty() ? std::vector<int32_t>{16, 64} : dims;
}

}  // namespace

// ---- varlen_attention ----

void check_varlen_attention(const Target& t, OpReport* r) {
  const DType io = t.io();
  std::mt19937_64 rng(t.opt.seed + 4);
  Tally tally(r);
  const std::vector<CacheCase> grid = cache_grid(t.b.caps, &r->note);
  for (const CacheCase& c : grid) {
    if (c.block_size != grid.front().block_size) continue;  // contiguous rows: no blocks
    for (int32_t gqa : kGqa) {
      for (int32_t batch : kBatches) {
        for (bool causal : {true, false}) {
          const int32_t nkv = c.kv_heads(), nq = nkv * gqa, hd = c.head_dim, vd = c.v_dim();
          auto k_lens = seq_lens(rng, batch, 5, !causal, false);
          std::vector<int32_t> q_lens = k_lens;
          if (!causal)
            for (int32_t& q : q_lens) q = 1 + 2 * static_cast<int32_t>(rng() % 3);  // 1, 3, 5
          std::vector<int32_t> qs{0}, ks{0};
          for (int32_t i = 0; i < batch; ++i) {
            qs.push_back(qs.back() + q_lens[i]);
            ks.push_back(ks.back() + k_lens[i]);
          }
          const int32_t rows = qs.back(), keys = ks.back();
          const auto q = round_to(random_floats(rng, static_cast<size_t>(rows) * nq * hd), io);
          const auto k = random_floats(rng, static_cast<size_t>(std::max(keys, 1)) * nkv * hd);
          const auto v = random_floats(rng, k.size());
          const bool mla = c.layout == KVCHECK_LAYOUT_MLA_LATENT;
          VarlenAttnArgs a;
          a.q = q.data();
          a.q_row_stride = nq * hd;
          a.k = k.data();
          a.v = mla ? k.data() : v.data();
          a.kv_row_stride = nkv * hd;
          a.q_starts = qs.data();
          a.k_starts = ks.data();
          a.out_row_stride = nq * vd;
          a.num_seqs = batch;
          a.num_rows = rows;
          a.num_keys = keys;
          a.num_q_heads = nq;
          a.num_kv_heads = nkv;
          a.head_dim = hd;
          a.v_dim = vd;
          a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
          a.causal = causal;
          a.kv_dtype = c.dtype;
          if (c.dtype == DType::fp8_e4m3) a.k_scale = 0.5f, a.v_scale = mla ? 0.5f : 2.0f;
          auto want = nan_floats(static_cast<size_t>(rows) * nq * vd), got = want;
          auto want_lse = nan_floats(static_cast<size_t>(rows) * nq), got_lse = want_lse;
          a.out = want.data();
          a.lse = want_lse.data();
          host::varlen_attention(a);
          const auto q_io = encode(q, io);
          auto got_io = encode(got, io);
          a.q = reinterpret_cast<const float*>(q_io.data());  // io elements: retyped below
          a.out = reinterpret_cast<float*>(got_io.data());
          a.lse = got_lse.data();
          a.max_q_len = *std::max_element(q_lens.begin(), q_lens.end());
          a.max_k_len = *std::max_element(k_lens.begin(), k_lens.end());
          a.q_starts_host = qs.data();
          a.k_starts_host = ks.data();
          std::vector<uint8_t> work = t.give_workspace(a);
          Staging s(t.device, t.dl);
          s.input(q_io);
          s.input(k);
          s.input(v);
          s.input(qs);
          s.input(ks);
          s.output(got_io);
          s.output(got_lse);
          s.output(work);
          backend::AbiBuilder builder = s.builder();
          kvcheck_varlen_attention_args args = builder.varlen_attention(a, rows, keys);
          retype_io(args.q, io);
          retype_io(args.out, io);
          std::string why = s.call(t.b, t.b.varlen_attention, args);
          got = decode(got_io, io);
          double worst = 0.0;
          if (why.empty())
            why = compare_states(t.b.caps, got, want, got_lse, want_lse, rows, nq, vd,
                                 t.out_tol(), t.opt.attention_tolerance, &worst);
          tally.add(fmt::format("{} q/kv={}/{} {} q_lens={} k_lens={}", c.describe(), nq, nkv,
                                causal ? "causal" : "context", list(q_lens), list(k_lens)),
                    why, worst);
        }
      }
    }
  }
}

// ---- merge_states ----

void check_merge_states(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed + 5);
  Tally tally(r);
  const kvcheck_caps& caps = t.b.caps;
  const DType io = t.io();
  for (int32_t rows : {1, 3, 5, 8}) {
    for (int32_t heads : {2, 8}) {
      for (int32_t dim : merge_dims(caps)) {
        const int32_t merge = static_cast<int32_t>(rng() % (rows + 1));
        const size_t n = static_cast<size_t>(rows) * heads * dim, nl = rows * heads;
        const auto oa = round_to(random_floats(rng, n), io);
        const auto ob = round_to(random_floats(rng, n), io);
        auto la = random_floats(rng, nl, -3.f, 3.f), lb = random_floats(rng, nl, -3.f, 3.f);
        la[0] = -INFINITY;  // an empty context
        if (nl > 2) la[1] = lb[1] = -INFINITY;  // both empty
        MergeStatesArgs a;
        a.out_a = oa.data();
        a.out_b = ob.data();
        a.row_stride = heads * dim;
        a.num_rows = rows;
        a.num_merge = merge;
        a.num_heads = heads;
        a.head_dim = dim;
        auto want = nan_floats(n), got = want;
        auto want_lse = nan_floats(nl), got_lse = want_lse;
        a.lse_a = la.data();
        a.lse_b = lb.data();
        a.out = want.data();
        a.lse = want_lse.data();
        host::merge_states(a);
        std::vector<float> pla(nl), plb(nl);  // the inputs in the backend's base
        for (size_t i = 0; i < nl; ++i) {
          pla[i] = to_backend(caps, la[i]);
          plb[i] = to_backend(caps, lb[i]);
        }
        const auto oa_io = encode(oa, io), ob_io = encode(ob, io);
        auto got_io = encode(got, io);
        a.out_a = reinterpret_cast<const float*>(oa_io.data());  // io elements: retyped below
        a.out_b = reinterpret_cast<const float*>(ob_io.data());
        a.lse_a = pla.data();
        a.lse_b = plb.data();
        a.out = reinterpret_cast<float*>(got_io.data());
        a.lse = got_lse.data();
        Staging s(t.device, t.dl);
        s.input(oa_io);
        s.input(ob_io);
        s.input(pla);
        s.input(plb);
        s.output(got_io);
        s.output(got_lse);
        backend::AbiBuilder builder = s.builder();
        kvcheck_merge_states_args args = builder.merge_states(a);
        retype_io(args.out_a, io);
        retype_io(args.out_b, io);
        retype_io(args.out, io);
        std::string why = s.call(t.b, t.b.merge_states, args);
        got = decode(got_io, io);
        double worst = 0.0;
        if (why.empty())
          why = compare_states(caps, got, want, got_lse, want_lse, rows, heads, dim,
                               t.out_tol(), t.opt.attention_tolerance, &worst);
        tally.add(fmt::format("rows={} merge={} heads={} dim={}", rows, merge, heads, dim), why,
                  worst);
      }
    }
  }
}

// ---- quant_fp8: y and the scale, exactly ----

void check_quant_fp8(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed + 6);
  Tally tally(r);
  for (int32_t rows : {1, 3, 5, 8}) {
    for (int32_t cols : {1, 7, 64}) {
      for (int variant = 0; variant < 3; ++variant) {  // fixed amax rows, device count, in place
        const int32_t amax_rows = 1 + static_cast<int32_t>(rng() % rows);
        const auto x = random_floats(rng, static_cast<size_t>(rows) * cols, -5.f, 5.f);
        auto want = nan_floats(x.size()), got = variant == 2 ? x : want;
        float want_scale = NAN, got_scale = NAN;
        QuantFp8Args a;
        a.x = x.data();
        a.y = want.data();
        a.row_stride = cols;
        a.cols = cols;
        a.num_rows = rows;
        a.amax_rows = variant == 1 ? &amax_rows : nullptr;
        a.amax_rows_fixed = variant == 1 ? 0 : amax_rows;
        a.scale_out = &want_scale;
        host::quant_fp8(a);
        a.x = variant == 2 ? got.data() : x.data();
        a.y = got.data();
        a.scale_out = &got_scale;
        Staging s(t.device, t.dl);
        s.input(x);
        s.input(&amax_rows, sizeof(amax_rows));
        s.output(got);
        s.output(&got_scale, sizeof(got_scale));
        std::string why = s.call(t.b, t.b.quant_fp8, s.builder().quant_fp8(a));
        double err = 0.0, serr = 0.0;
        const auto* g = reinterpret_cast<const uint8_t*>(got.data());
        if (why.empty())
          why = compare_exact(g, reinterpret_cast<const uint8_t*>(want.data()),
                              got.size() * 4, DType::f32, &err);
        if (why.empty())
          if (std::string s = compare_exact(reinterpret_cast<const uint8_t*>(&got_scale),
                                            reinterpret_cast<const uint8_t*>(&want_scale), 4,
                                            DType::f32, &serr);
              !s.empty())
            why = "scale_out: " + s;
        static const char* kinds[] = {"fixed amax rows", "amax rows in memory", "in place"};
        tally.add(fmt::format("rows={} cols={} amax_rows={} {}", rows, cols, amax_rows,
                              kinds[variant]),
                  why, std::max(err, serr));
      }
    }
  }
}

// ---- linear_attention: out per (row, head) and the stored states, relative L2 ----

void check_linear_attention(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed + 7);
  Tally tally(r);
  for (int32_t dim : {16, 64}) {
    for (int32_t heads : {1, 2}) {
      for (int32_t batch : kBatches) {
        const int32_t num_blocks = batch + 3;
        auto ids = HostCache::shuffled_blocks(num_blocks, rng);
        std::vector<int32_t> lens, blocks, init, starts{0};
        for (int32_t s = 0; s < batch; ++s) {
          const bool padded = batch >= 3 && s == batch - 1;  // a padded graph row: state -1
          lens.push_back(padded ? 1 : (s % 3 == 0 ? 1 : 2 * static_cast<int32_t>(rng() % 5) + 3));
          blocks.push_back(padded ? -1 : ids[s]);
          init.push_back(static_cast<int32_t>(rng() % 2));
          starts.push_back(starts.back() + lens.back());
        }
        const int32_t rows = starts.back();
        const size_t per_block = static_cast<size_t>(heads) * dim * dim;
        const size_t row = static_cast<size_t>(heads) * dim;
        auto want_state = random_floats(rng, num_blocks * per_block), got_state = want_state;
        const auto q = random_floats(rng, rows * row), k = random_floats(rng, rows * row),
                   v = random_floats(rng, rows * row);
        const auto gate = random_floats(rng, static_cast<size_t>(rows) * heads, -2.f, 2.f);
        auto want = nan_floats(rows * row), got = want;
        LinearAttnArgs a;
        a.state = want_state.data();
        a.state_block_stride = static_cast<int64_t>(per_block);
        a.q = q.data();
        a.k = k.data();
        a.v = v.data();
        a.qkv_row_stride = static_cast<int64_t>(row);
        a.gate = gate.data();
        a.gate_row_stride = heads;
        a.out = want.data();
        a.out_row_stride = static_cast<int64_t>(row);
        a.seq_starts = starts.data();
        a.state_blocks = blocks.data();
        a.has_initial_state = init.data();
        a.num_seqs = batch;
        a.num_rows = rows;
        a.state_blocks_total = num_blocks;
        a.num_heads = heads;
        a.head_dim = dim;
        a.scale = 1.0f / std::sqrt(static_cast<float>(dim));
        host::linear_attention(a);
        a.state = got_state.data();
        a.out = got.data();
        Staging s(t.device, t.dl);
        s.input(q);
        s.input(k);
        s.input(v);
        s.input(gate);
        s.input(starts);
        s.input(blocks);
        s.input(init);
        s.output(got_state);
        s.output(got);
        std::string why = s.call(t.b, t.b.linear_attention,
                                 s.builder().linear_attention(a, rows, num_blocks));
        double worst = 0.0;
        const double tol = t.opt.attention_tolerance;
        for (int32_t s = 0; s < batch && why.empty(); ++s) {
          if (blocks[s] < 0) continue;  // a padded row: nothing to compare
          for (int32_t i = starts[s]; i < starts[s + 1] && why.empty(); ++i)
            for (int32_t h = 0; h < heads && why.empty(); ++h) {
              const size_t o = i * row + static_cast<size_t>(h) * dim;
              const double e = rel_l2(got.data() + o, want.data() + o, dim);
              if (!(e <= worst)) worst = e;
              if (!(e <= tol))
                why = fmt::format("row {} head {}: out rel err {}", i, h, fmt_err(e));
            }
        }
        for (int32_t b = 0; b < num_blocks && why.empty(); ++b) {  // others unchanged: error 0
          const size_t o = b * per_block;
          const double e = rel_l2(got_state.data() + o, want_state.data() + o,
                                  static_cast<int64_t>(per_block));
          if (!(e <= worst)) worst = e;
          if (!(e <= tol)) why = fmt::format("state of block {}: rel err {}", b, fmt_err(e));
        }
        tally.add(fmt::format("heads={} dim={} batch={} lens={} initial={}", heads, dim, batch,
                              list(lens), list(init)),
                  why, worst);
      }
    }
  }
}

}  // namespace kv::conform
