// conform_cache.cpp — `kvcheck conform` of the ops over the paged cache: write_kv, paged_decode,
// gather_kv and fill_blocks, each against kv::host's op on a copy of the same random cache.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "conform/conform_support.h"
#include "kernels/attn_state.cuh"
#include "kernels/block_count.cuh"
#include "kernels/decode_splits.h"
#include "kernels/host/host_ops.h"

namespace kv::conform {

namespace {

constexpr int32_t kMaxSplits = 4;  // so that the built-in decode splits long rows

int32_t blocks_for(int32_t len, int32_t bs) { return len <= 0 ? 0 : blocks_for_tokens(len, bs); }

// A batch of sequences laid out in a cache: their block tables (unused entries `pad`).
struct Batch {
  std::vector<int32_t> lens;  // -1: a padded row
  std::vector<int32_t> table;
  int32_t stride = 1;  // entries per row
  int32_t num_blocks = 0;
};

Batch make_batch(std::vector<int32_t> lens, int32_t bs, int32_t pad, std::mt19937_64& rng) {
  Batch b;
  b.lens = std::move(lens);
  int32_t total = 0, most = 0;
  for (int32_t l : b.lens) {
    total += blocks_for(l, bs);
    most = std::max(most, blocks_for(l, bs));
  }
  b.stride = most + 1;  // one unused entry per row at least
  b.num_blocks = total + 3;  // the null block and two never used
  const auto ids = HostCache::shuffled_blocks(b.num_blocks, rng);
  b.table.assign(b.lens.size() * b.stride, pad);
  size_t next = 0;
  for (size_t r = 0; r < b.lens.size(); ++r)
    for (int32_t i = 0; i < blocks_for(b.lens[r], bs); ++i) b.table[r * b.stride + i] = ids[next++];
  return b;
}

std::string exact_case(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                       DType dtype, double* err) {
  return compare_exact(got.data(), want.data(), got.size(), dtype, err);
}

}  // namespace

// ---- write_kv: the cache bytes after the call, exactly ----

void check_write_kv(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed);
  Tally tally(r);
  for (const CacheCase& c : cache_grid(t.b.caps, &r->note)) {
    for (int32_t n : {1, 3, 5, 17}) {
      const int32_t heads = c.kv_heads(), row = heads * c.head_dim + 3;  // rows padded by 3
      const int32_t num_blocks = blocks_for_tokens(n, c.block_size) + 3;
      HostCache want(c, num_blocks, rng);
      HostCache got(want);
      // Distinct slots anywhere past the null block; the last of 3 or more is a padded row.
      std::vector<int64_t> slots;
      for (int64_t s = c.block_size; s < static_cast<int64_t>(num_blocks) * c.block_size; ++s)
        slots.push_back(s);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(n);
      if (n >= 3) slots.back() = -1;
      auto k = random_floats(rng, static_cast<size_t>(n) * row, -3.f, 3.f);
      auto v = random_floats(rng, static_cast<size_t>(n) * row, -3.f, 3.f);
      k[0] = 1000.f;  // beyond fp8's 448 at any scale here: saturates
      const bool mla = c.layout == KVCHECK_LAYOUT_MLA_LATENT;
      WriteKvArgs a;
      a.k = k.data();
      a.v = mla ? nullptr : v.data();
      a.k_row_stride = a.v_row_stride = row;
      a.slot_mapping = slots.data();
      a.num_tokens = n;
      a.cache = want.kv();
      host::write_kv(a);
      a.cache = got.kv();
      std::vector<uint8_t> work = t.give_workspace(a);
      Staging s(t.device, t.dl);
      s.input(k);
      s.input(v);
      s.input(slots);
      s.output(got.bytes());
      s.output(work);
      std::string why = s.call(t.b, t.b.write_kv, s.builder().write_kv(a));
      double err = 0.0;
      if (why.empty()) why = exact_case(got.bytes(), want.bytes(), c.dtype, &err);
      tally.add(fmt::format("{} tokens={}", c.describe(), n), why, err);
    }
  }
}

// ---- paged_decode: out (and lse) per (row, head), relative L2 ----

namespace {

// The lse of the built-in decode, folded from its split states as the host plugin does.
std::vector<float> builtin_lse(const PagedDecodeArgs& d) {
  std::vector<float> lse(static_cast<size_t>(d.num_rows) * d.num_q_heads, -INFINITY);
  for (int32_t row = 0; row < d.num_rows; ++row) {
    if (d.seq_lens[row] <= 0) continue;
    for (int32_t h = 0; h < d.num_q_heads; ++h) {
      float l = -INFINITY;
      for (int32_t s = 0; s < d.split_meta[kDecodeMetaHeader + row]; ++s)
        l = merge_weights(l, d.partial_lse[(static_cast<int64_t>(row) * d.max_splits + s) *
                                               d.num_q_heads + h]).lse;
      lse[static_cast<size_t>(row) * d.num_q_heads + h] = l;
    }
  }
  return lse;
}

constexpr float kUntouched = 12288.0f;  // a padded row's output before the call (exact in bf16)

}  // namespace

void check_paged_decode(const Target& t, OpReport* r) {
  const kvcheck_caps& caps = t.b.caps;
  const DType io = t.io();
  Tally tally(r);
  for_each_attention_case(t, r, 1, [&](const CacheCase& c, int32_t batch, int32_t nq,
                                        bool want_lse, std::mt19937_64& rng) {
    const int32_t hd = c.head_dim, vd = c.v_dim();
    Batch bt = make_batch(seq_lens(rng, batch, c.block_size, false, true), c.block_size,
                          0, rng);
    HostCache cache(c, bt.num_blocks, rng);
    // The built-in contract: padded rows seq_len 0, block 0. The plugin's: its caps.
    std::vector<int32_t> ref_lens = bt.lens, lens = bt.lens, table = bt.table;
    for (size_t i = 0; i < lens.size(); ++i) {
      if (lens[i] >= 0) continue;
      ref_lens[i] = 0;
      lens[i] = caps.pad_seq_len;
      for (int32_t j = 0; j < bt.stride; ++j) table[i * bt.stride + j] = caps.pad_block_id;
    }
    for (size_t i = 0; i < table.size(); ++i)
      if (bt.table[i] == 0) table[i] = caps.pad_block_id;
    const auto q = round_to(random_floats(rng, static_cast<size_t>(batch) * nq * hd), io);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

    // The built-in op, with its own plan and workspace.
    PagedDecodeArgs d;
    d.cache = cache.kv();
    d.q = q.data();
    d.q_row_stride = nq * hd;
    d.out_row_stride = nq * vd;
    d.block_table = bt.table.data();
    d.block_table_stride = bt.stride;
    d.seq_lens = ref_lens.data();
    d.max_splits = kMaxSplits;
    d.num_rows = batch;
    d.num_q_heads = nq;
    d.v_dim = vd;
    d.scale = scale;
    auto want = nan_floats(static_cast<size_t>(batch) * nq * vd);
    const auto plan = plan_decode_splits_for(c.dtype, ref_lens, c.block_size, kMaxSplits);
    std::vector<float> work(decode_workspace_bytes(batch, nq, vd, kMaxSplits) / 4);
    d.out = want.data();
    d.split_meta = plan.data();
    d.partial_out = work.data();
    d.partial_lse = work.data() + static_cast<size_t>(batch) * kMaxSplits * nq * vd;
    host::paged_decode(d);
    const auto want_lse_v = builtin_lse(d);

    // The plugin: its plan step (or the built-in plan, as the engine hands it), workspace.
    auto got = nan_floats(want.size());
    for (size_t i = 0; i < lens.size(); ++i)
      if (bt.lens[i] < 0)
        std::fill_n(got.begin() + i * nq * vd, nq * vd, kUntouched);
    auto got_lse = nan_floats(want_lse_v.size());
    const auto q_io = encode(q, io);
    auto got_io = encode(got, io);
    d.cache = cache.kv();
    d.seq_lens = lens.data();
    d.block_table = table.data();
    d.q = reinterpret_cast<const float*>(q_io.data());  // io elements: retyped below
    d.out = reinterpret_cast<float*>(got_io.data());
    std::vector<uint8_t> pplan(plan.size() * 4);
    memcpy(pplan.data(), plan.data(), pplan.size());
    std::string why;
    Staging s(t.device, t.dl);
    s.input(cache.bytes());
    s.input(q_io);
    s.input(lens);
    s.input(table);
    s.output(got_io);
    s.output(got_lse);
    DecodePlanArgs p{.seq_lens_host = lens.data(),
                     .num_rows = batch,
                     .block_size = c.block_size,
                     .cache_dtype = c.dtype,
                     .max_splits = kMaxSplits,
                     .num_q_heads = nq,
                     .num_kv_heads = c.kv_heads(),
                     .head_dim = hd,
                     .v_dim = vd,
                     .latent = c.layout == KVCHECK_LAYOUT_MLA_LATENT,
                     .interleaved = c.layout == KVCHECK_LAYOUT_KV_INTERLEAVED,
                     .max_blocks_per_seq = bt.stride};
    const kvcheck_size_query query = backend::size_query(p);
    if (t.b.paged_decode_plan && t.b.plan_bytes) {
      pplan.assign(std::max<size_t>(t.b.plan_bytes(t.b.self, &query), 1), 0);
      p.plan = reinterpret_cast<int32_t*>(pplan.data());
      p.plan_bytes = pplan.size();
      s.output(pplan);
      why = s.call(t.b, t.b.paged_decode_plan, s.builder().decode_plan(p));
    } else {
      s.input(pplan);
    }
    std::vector<uint8_t> pwork = t.workspace(query);
    s.output(pwork);
    backend::DecodeBuffers bufs{pplan.data(), pplan.size(),
                                pwork.empty() ? nullptr : pwork.data(), pwork.size(),
                                want_lse ? got_lse.data() : nullptr};
    d.partial_out = d.partial_lse = nullptr;
    backend::AbiBuilder builder = s.builder();
    kvcheck_paged_decode_args args = builder.paged_decode(d, bufs);
    if (pwork.empty()) args.workspace.dl.data = nullptr;
    retype_io(args.q, io);
    retype_io(args.out, io);
    if (why.empty()) why = s.call(t.b, t.b.paged_decode, args);
    got = decode(got_io, io);

    double worst = 0.0;
    for (int32_t row = 0; row < batch && why.empty(); ++row) {
      if (bt.lens[row] < 0) {  // padded: untouched or zero (finite with pad_seq_len 1)
        for (int32_t i = 0; i < nq * vd && why.empty(); ++i) {
          const float g = got[static_cast<size_t>(row) * nq * vd + i];
          const bool fine =
              caps.pad_seq_len == 1 ? std::isfinite(g) : (g == kUntouched || g == 0.f);
          if (!fine) why = fmt::format("padded row {} head {}: output {}", row, i / vd, g);
        }
        continue;
      }
      why = compare_row(t, got.data(), want.data(), want_lse ? got_lse.data() : nullptr,
                        want_lse_v.data(), row, nq, vd, &worst);
      if (!why.empty()) why = fmt::format("row {} (seq_len {}) {}", row, lens[row], why);
    }
    tally.add(fmt::format("{} q/kv={}/{} batch={} lens={}{}", c.describe(), nq,
                          c.kv_heads(), batch, list(bt.lens), want_lse ? " +lse" : ""),
              why, worst);
  });
}

// ---- paged_prefill: out (and lse) per (row, head) against the host op, relative L2 ----

void check_paged_prefill(const Target& t, OpReport* r) {
  const DType io = t.io();
  Tally tally(r);
  for_each_attention_case(t, r, 9, [&](const CacheCase& c, int32_t batch, int32_t nq,
                                        bool want_lse, std::mt19937_64& rng) {
    const int32_t hd = c.head_dim, vd = c.v_dim();
    // Each sequence: a cached context (none for some) and at least one new token.
    std::vector<int32_t> totals = seq_lens(rng, batch, c.block_size, false, false);
    std::vector<int32_t> ctx(batch), q_starts{0};
    for (int32_t s = 0; s < batch; ++s) {
      const int32_t fresh = 1 + static_cast<int32_t>(rng() % totals[s]);
      ctx[s] = totals[s] - fresh;
      q_starts.push_back(q_starts.back() + fresh);
    }
    Batch bt = make_batch(totals, c.block_size, t.b.caps.pad_block_id, rng);
    HostCache cache(c, bt.num_blocks, rng);
    const int32_t rows = q_starts.back();
    const auto q = round_to(random_floats(rng, static_cast<size_t>(rows) * nq * hd), io);
    PagedPrefillArgs a;
    a.cache = cache.kv();
    a.q = q.data();
    a.q_row_stride = nq * hd;
    a.out_row_stride = nq * vd;
    a.q_starts = q_starts.data();
    a.ctx_lens = ctx.data();
    a.block_table = bt.table.data();
    a.block_table_stride = bt.stride;
    a.num_seqs = batch;
    a.num_rows = rows;
    a.num_q_heads = nq;
    a.v_dim = vd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.max_q_len = a.max_ctx_len = 0;
    for (int32_t s = 0; s < batch; ++s) {
      a.max_q_len = std::max(a.max_q_len, q_starts[s + 1] - q_starts[s]);
      a.max_ctx_len = std::max(a.max_ctx_len, ctx[s]);
    }
    a.q_starts_host = q_starts.data();
    a.ctx_lens_host = ctx.data();
    auto want = nan_floats(static_cast<size_t>(rows) * nq * vd);
    auto want_lse_v = nan_floats(static_cast<size_t>(rows) * nq);
    a.out = want.data();
    a.lse = want_lse_v.data();
    host::paged_prefill(a);

    auto got = nan_floats(want.size()), got_lse = nan_floats(want_lse_v.size());
    const auto q_io = encode(q, io);
    auto got_io = encode(got, io);
    a.q = reinterpret_cast<const float*>(q_io.data());  // io elements: retyped below
    a.out = reinterpret_cast<float*>(got_io.data());
    a.lse = want_lse ? got_lse.data() : nullptr;
    std::vector<uint8_t> work = t.give_workspace(a);
    Staging s(t.device, t.dl);
    s.input(cache.bytes());
    s.input(q_io);
    s.input(q_starts);
    s.input(ctx);
    s.input(bt.table);
    s.output(got_io);
    s.output(got_lse);
    s.output(work);
    backend::AbiBuilder builder = s.builder();
    kvcheck_paged_prefill_args args = builder.paged_prefill(a);
    retype_io(args.q, io);
    retype_io(args.out, io);
    std::string why = s.call(t.b, t.b.paged_prefill, args);
    got = decode(got_io, io);
    double worst = 0.0;
    for (int32_t row = 0; row < rows && why.empty(); ++row) {
      why = compare_row(t, got.data(), want.data(), want_lse ? got_lse.data() : nullptr,
                        want_lse_v.data(), row, nq, vd, &worst);
      if (!why.empty()) why = fmt::format("row {} {}", row, why);
    }
    tally.add(fmt::format("{} q/kv={}/{} batch={} ctx={} new={}{}", c.describe(), nq,
                          c.kv_heads(), batch, list(ctx), list(q_starts),
                          want_lse ? " +lse" : ""),
              why, worst);
  });
}

// ---- gather_kv: the contiguous rows, exactly ----

void check_gather_kv(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed + 2);
  Tally tally(r);
  for (const CacheCase& c : cache_grid(t.b.caps, &r->note)) {
    for (int32_t batch : kBatches) {
      Batch bt = make_batch(seq_lens(rng, batch, c.block_size, true, false), c.block_size,
                            t.b.caps.pad_block_id, rng);
      HostCache cache(c, bt.num_blocks, rng);
      std::vector<int32_t> starts{0};
      for (int32_t l : bt.lens) starts.push_back(starts.back() + l);
      const int32_t total = starts.back();
      const size_t row = static_cast<size_t>(c.kv_heads()) * c.head_dim;
      const bool mla = c.layout == KVCHECK_LAYOUT_MLA_LATENT;
      auto wk = nan_floats((total + 1) * row), wv = nan_floats((total + 1) * row);
      auto gk = wk, gv = wv;
      GatherKvArgs a;
      a.cache = cache.kv();
      a.block_table = bt.table.data();
      a.block_table_stride = bt.stride;
      a.ctx_lens = bt.lens.data();
      a.ctx_starts = starts.data();
      a.num_seqs = batch;
      a.total_ctx = total;
      a.k_out = wk.data();
      a.v_out = mla ? nullptr : wv.data();
      host::gather_kv(a);
      a.k_out = gk.data();
      a.v_out = mla ? nullptr : gv.data();
      Staging s(t.device, t.dl);
      s.input(cache.bytes());
      s.input(bt.table);
      s.input(bt.lens);
      s.input(starts);
      s.output(gk);
      s.output(gv);
      std::string why = s.call(t.b, t.b.gather_kv, s.builder().gather_kv(a, total));
      double ek = 0.0, ev = 0.0;
      const size_t bytes = wk.size() * sizeof(float);
      const auto* g8 = reinterpret_cast<const uint8_t*>(gk.data());
      if (why.empty())
        why = compare_exact(g8, reinterpret_cast<const uint8_t*>(wk.data()), bytes, DType::f32,
                            &ek);
      if (why.empty() && !mla)
        why = compare_exact(reinterpret_cast<const uint8_t*>(gv.data()),
                            reinterpret_cast<const uint8_t*>(wv.data()), bytes, DType::f32, &ev);
      tally.add(fmt::format("{} batch={} ctx_lens={}", c.describe(), batch, list(bt.lens)), why,
                std::max(ek, ev));
    }
  }
}

// ---- fill_blocks: zero exactly; every pattern leaves the other blocks alone ----

void check_fill_blocks(const Target& t, OpReport* r) {
  std::mt19937_64 rng(t.opt.seed + 3);
  Tally tally(r);
  for (const CacheCase& c : cache_grid(t.b.caps, &r->note)) {
    for (auto pattern : {FillPattern::zero, FillPattern::nan, FillPattern::inf}) {
      const int32_t num_blocks = 6;
      HostCache want(c, num_blocks, rng);
      HostCache got(want);
      auto ids = HostCache::shuffled_blocks(num_blocks, rng);
      ids.resize(1 + rng() % 3);
      FillBlocksArgs a;
      a.block_ids = ids.data();
      a.num_ids = static_cast<int32_t>(ids.size());
      a.pattern = pattern;
      a.seed = 7;
      a.cache = got.kv();
      Staging s(t.device, t.dl);
      s.input(ids);
      s.output(got.bytes());
      std::string why = s.call(t.b, t.b.fill_blocks, s.builder().fill_blocks(a));
      double err = 0.0;
      if (pattern == FillPattern::zero) {
        a.cache = want.kv();
        host::fill_blocks(a);
        if (why.empty()) why = exact_case(got.bytes(), want.bytes(), c.dtype, &err);
      } else {  // the filled pages' bytes are the backend's; every other byte is unchanged
        const PagedKv& kv = want.kv();
        std::vector<uint8_t> expect = want.bytes(), masked = got.bytes();
        const int es = dtype_size(c.dtype);
        const auto* base = static_cast<const uint8_t*>(kv.k);
        for (int32_t id : ids)
          for (int32_t e = 0; e < c.block_size; ++e)
            for (int32_t h = 0; h < c.kv_heads(); ++h)
              for (int32_t f = 0; f < c.head_dim; ++f)
                for (int64_t off : {k_offset(kv, id, e, h, f) * es,
                                    (static_cast<const uint8_t*>(kv.v) - base) +
                                        v_offset(kv, id, e, h, f) * es}) {
                  const size_t at = static_cast<size_t>(off + (base - want.bytes().data()));
                  std::fill_n(expect.begin() + at, es, 0);
                  std::fill_n(masked.begin() + at, es, 0);
                }
        if (why.empty()) why = exact_case(masked, expect, c.dtype, &err);
        if (!why.empty() && why.rfind("returned", 0) != 0) why = "outside the blocks: " + why;
      }
      tally.add(fmt::format("{} pattern={} ids={}", c.describe(),
                            backend::fill_pattern_name(static_cast<int32_t>(pattern)), list(ids)),
                why, err);
    }
  }
}

}  // namespace kv::conform
