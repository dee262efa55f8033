// decode_check.cu — `kvbench_decode --check`: every CUDA paged-decode path against the host op
// kernels/host/paged_decode.cpp (the spec), on random shapes. Built into kvbench_decode.
//
// Each case builds a paged cache on the host (NaN everywhere except written tokens and zeroed
// owned blocks, shuffled block tables whose unused entries point at the NaN block 0), runs the
// host op, uploads the same bytes, and runs every path that accepts the descriptor with outputs
// and workspace poisoned (a NaN payload no op writes). A path passes a case when
//   - padded rows (seq_len 0) and the padding between out rows still hold the poison, in `out`
//     and in the workspace;
//   - every other output element is written, its NaN/Inf pattern equals the host's exactly, and
//     each (row, head)'s relative L2 error against the host is within the path's tolerance;
//   - for rows the plan splits (>= 2 splits) the per-split states (out and lse) match too.
// Special cases: the whole-tile NaN rule (stale V in the last block's tail reaches the output,
// stale K there does not), a graph replay that must read the plan of replay time, plans the host
// rejects (device writes NaN to that row) and rows planned with 0 splits (zeros).
// Prints one line per failure and a closing "N passed, M failed"; returns the failure count.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/decode_splits.h"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"
#include "kernels/cuda/decode_path.h"
#include "tests/support/decode_tolerance.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/support/row_compare.h"

namespace kv::bench {
namespace {

using cuda::DecodePath;
using test::Rng;

enum class Plan { one, many, past_end, engine, engine_fp8 };
const char* plan_name(Plan p) {
  switch (p) {
    case Plan::one: return "one";
    case Plan::many: return "many";
    case Plan::past_end: return "past_end";
    case Plan::engine: return "engine";
    case Plan::engine_fp8: return "engine_fp8";
  }
  return "?";
}

struct Spec {
  KvLayout layout = KvLayout::kv_separate;
  DType dtype = DType::bf16;
  int bs = 16, kv_heads = 2, ratio = 4, head_dim = 128, v_dim = 0;
  bool mla = false;  // cache.v = cache.k, V = the first v_dim latent features, written once
  std::vector<int32_t> lens;
  Plan plan = Plan::many;
  int engine_splits = 3;
  float k_scale = 1.0f, v_scale = 1.0f;
  // q and out rows padded by 4 floats (16-byte aligned rows: the vector and bulk paths) instead
  // of an odd count (unaligned rows: the element-wise fallbacks).
  bool aligned_rows = false;
};

std::string describe(const Spec& s) {
  char b[256];
  std::snprintf(b, sizeof b, "%s%s %s bs=%d kvh=%d G=%d hd=%d vd=%d rows=%zu plan=%s%s",
                s.mla ? "mla " : "", test::dtype_name(s.dtype),
                s.layout == KvLayout::kv_separate ? "kv_separate" : "kv_interleaved", s.bs, s.kv_heads, s.ratio,
                s.head_dim, s.v_dim ? s.v_dim : s.head_dim, s.lens.size(), plan_name(s.plan),
                s.aligned_rows ? " rows16" : "");
  return b;
}

// A case on the host: the cache, the plan, q, and the host op's results.
struct HostCase : test::DecodeBuffers {
  Spec s;
  test::TestCache cache;
  int H = 0, vd = 0;

  PagedDecodeArgs host_args() { return args(cache.desc, s.lens, H, s.v_dim); }
  void run_host() {
    poison_outputs();
    host::paged_decode(host_args());
  }
};

std::vector<int32_t> make_plan(const Spec& s, int& max_splits) {
  const int bs = s.bs;
  int32_t maxlen = 1;
  for (int32_t l : s.lens) maxlen = std::max(maxlen, l);
  const int max_blocks = (maxlen + bs - 1) / bs;
  if (s.plan == Plan::engine || s.plan == Plan::engine_fp8) {
    max_splits = s.engine_splits;
    return s.plan == Plan::engine ? plan_decode_splits(s.lens, bs, max_splits)
                                  : plan_decode_splits_fp8(s.lens, bs, max_splits);
  }
  int chunk = bs;
  if (s.plan == Plan::one) chunk = max_blocks * bs, max_splits = 1;
  if (s.plan == Plan::many) chunk = bs, max_splits = max_blocks;
  if (s.plan == Plan::past_end) chunk = 2 * bs, max_splits = (maxlen + 2 * bs - 1) / (2 * bs) + 2;
  std::vector<int32_t> meta = {chunk};
  for (int32_t l : s.lens) {
    const int needed = (l + chunk - 1) / chunk;
    // Padded rows get a full split count: seq_len 0 alone must keep them unwritten.
    meta.push_back(s.plan == Plan::past_end || l == 0 ? max_splits : needed);
  }
  return meta;
}

HostCase make_case(const Spec& s, Rng& rng) {
  HostCase c;
  c.s = s;
  const int bs = s.bs, hd = s.head_dim, kvh = s.mla ? 1 : s.kv_heads;
  c.s.kv_heads = kvh;
  int32_t maxlen = 1;
  for (int32_t l : s.lens) maxlen = std::max(maxlen, l);
  c.table_stride = (maxlen + bs - 1) / bs + 2;
  const int nb = test::blocks_needed(s.lens, bs) + 3;
  c.cache = test::make_test_cache(s.layout, s.dtype, nb, bs, kvh, hd);
  PagedKv& d = c.cache.desc;
  d.k_scale = s.k_scale;
  d.v_scale = s.v_scale;
  if (s.mla) {
    d.v = d.k;
    d.v_stride_block = d.k_stride_block;
    d.v_stride_token = d.k_stride_token;
    d.v_stride_head = d.k_stride_head;
  }
  c.table = test::shuffled_tables(rng, nb, bs, s.lens, c.table_stride);
  const int row_elems = kvh * hd;
  for (size_t r = 0; r < s.lens.size(); ++r) {
    const int len = s.lens[r];
    const std::vector<float> k = test::random_floats(rng, size_t(len) * row_elems);
    const std::vector<float> v = test::random_floats(rng, size_t(len) * row_elems);
    const int32_t* tab = &c.table[r * c.table_stride];
    if (!s.mla) {
      test::store_sequence(c.cache, tab, len, k.data(), v.data());
      continue;
    }
    // MLA: zero the owned blocks, then write the latent rows once (v = nullptr).
    host::fill_blocks(FillBlocksArgs{d, tab, (len + bs - 1) / bs, FillPattern::zero, 0});
    std::vector<int64_t> slots(len);
    for (int t = 0; t < len; ++t) slots[t] = int64_t(tab[t / bs]) * bs + t % bs;
    WriteKvArgs w;
    w.cache = d;
    w.k = k.data();
    w.k_row_stride = row_elems;
    w.slot_mapping = slots.data();
    w.num_tokens = len;
    host::write_kv(w);
  }
  c.H = kvh * s.ratio;
  c.vd = s.v_dim ? s.v_dim : hd;
  c.q_stride = c.H * hd + (s.aligned_rows ? 4 : 5);      // row padding: strides must be honoured
  c.out_stride = c.H * c.vd + (s.aligned_rows ? 4 : 3);  // ... and the padding left untouched
  const size_t rows = s.lens.size();
  c.q = test::random_floats(rng, rows * c.q_stride);
  c.scale = 2.0f / std::sqrt(float(hd));  // sharper than 1/sqrt(d)
  c.meta = make_plan(s, c.max_splits);
  c.out.resize(rows * c.out_stride);
  c.partial_out.resize(rows * c.max_splits * c.H * c.vd);
  c.partial_lse.resize(rows * c.max_splits * c.H);
  return c;
}

// The same case in device memory; out and workspace poisoned by reset().
struct DeviceCase {
  DevBuf cache, table, lens, meta, q, out, pout, plse;
  PagedKv desc;

  explicit DeviceCase(const HostCase& h) {
    const size_t bytes = h.cache.storage.size() * sizeof(uint64_t);
    cache = DevBuf(bytes);
    BENCH_CUDA(cudaMemcpy(cache.as(), h.cache.storage.data(), bytes, cudaMemcpyHostToDevice));
    desc = h.cache.desc;
    const char* hb = reinterpret_cast<const char*>(h.cache.storage.data());
    desc.k = cache.as<char>() + (static_cast<const char*>(h.cache.desc.k) - hb);
    desc.v = cache.as<char>() + (static_cast<const char*>(h.cache.desc.v) - hb);
    table = upload(h.table);
    lens = upload(h.s.lens);
    meta = upload(h.meta);
    q = upload(h.q);
    out = DevBuf(h.out.size() * 4);
    pout = DevBuf(h.partial_out.size() * 4);
    plse = DevBuf(h.partial_lse.size() * 4);
  }
  void reset(const HostCase& h) {
    std::vector<float> p(std::max({h.out.size(), h.partial_out.size(), h.partial_lse.size()}));
    test::poison(p);
    BENCH_CUDA(cudaMemcpy(out.as(), p.data(), out.bytes(), cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(pout.as(), p.data(), pout.bytes(), cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(plse.as(), p.data(), plse.bytes(), cudaMemcpyHostToDevice));
  }
  // The host case's call with each buffer its device copy.
  PagedDecodeArgs args(HostCase& h) {
    PagedDecodeArgs a = h.host_args();
    a.cache = desc;
    a.q = q.as<float>(), a.out = out.as<float>();
    a.block_table = table.as<int32_t>(), a.seq_lens = lens.as<int32_t>();
    a.split_meta = meta.as<int32_t>();
    a.partial_out = pout.as<float>(), a.partial_lse = plse.as<float>();
    return a;
  }
};

// Relative L2 of n values against the host's, over the elements both have finite; the NaN/Inf
// pattern must be identical and nothing may still hold the poison. Returns a problem or "".
// The comparison itself is test::compare_row (tests/support/row_compare.h, as the GPU tests'
// close_rows) with floor 0: an all-zero host row is compared by its absolute error.
std::string compare_vec(const float* dev, const float* host, int n, double tol, double& err) {
  for (int i = 0; i < n; ++i)
    if (test::is_poison(dev[i])) return "element " + std::to_string(i) + " never written";
  const test::RowCheck r = test::compare_row(host, dev, static_cast<size_t>(n), tol, 0.0);
  if (r.bad_element != test::RowCheck::kNoElement)
    return "element " + std::to_string(r.bad_element) + ": " + r.why;
  err = r.err;
  if (!r.ok) return "relative L2 error " + std::to_string(err) + " > " + std::to_string(tol);
  return "";
}

// Compares a device run with the host run; rows in `skip_rows` are not compared.
std::string compare_case(const HostCase& h, const std::vector<float>& out,
                         const std::vector<float>& pout, const std::vector<float>& plse,
                         double tol, double& max_err, const std::vector<int>& skip_rows = {}) {
  const int H = h.H, vd = h.vd, S = h.max_splits;
  for (size_t r = 0; r < h.s.lens.size(); ++r) {
    if (std::find(skip_rows.begin(), skip_rows.end(), int(r)) != skip_rows.end()) continue;
    const float* o = &out[r * h.out_stride];
    const std::string where = "row " + std::to_string(r) + " (len " + std::to_string(h.s.lens[r]) + ")";
    if (h.s.lens[r] == 0) {
      for (int i = 0; i < h.out_stride; ++i)
        if (!test::is_poison(o[i])) return where + ": padded row written at out[" + std::to_string(i) + "]";
      for (size_t i = r * S * H * vd; i < (r + 1) * S * H * vd; ++i)
        if (!test::is_poison(pout[i])) return where + ": padded row wrote the workspace";
      for (size_t i = r * S * H; i < (r + 1) * S * H; ++i)
        if (!test::is_poison(plse[i])) return where + ": padded row wrote a workspace lse";
      continue;
    }
    for (int i = H * vd; i < h.out_stride; ++i)
      if (!test::is_poison(o[i])) return where + ": wrote the padding past the last head";
    for (int hh = 0; hh < H; ++hh) {
      double err = 0.0;
      const std::string p = compare_vec(o + hh * vd, &h.out[r * h.out_stride + hh * vd], vd, tol, err);
      if (!p.empty()) return where + " head " + std::to_string(hh) + ": " + p;
      max_err = std::max(max_err, err);
    }
    const int ns = h.meta[kDecodeMetaHeader + r];
    if (ns < 2 || ns > S) continue;
    for (int s = 0; s < ns; ++s)
      for (int hh = 0; hh < H; ++hh) {
        const size_t li = (r * S + s) * H + hh;
        const float dl = plse[li], hl = h.partial_lse[li];
        const bool same = (std::isnan(dl) && std::isnan(hl)) || dl == hl ||
                          std::fabs(double(dl) - hl) <= tol * (1.0 + std::fabs(double(hl)));
        if (!same)
          return where + " split " + std::to_string(s) + " head " + std::to_string(hh) +
                 ": lse host " + std::to_string(hl) + " device " + std::to_string(dl);
        double err = 0.0;
        const std::string p = compare_vec(&pout[li * vd], &h.partial_out[li * vd], vd, tol, err);
        if (!p.empty())
          return where + " split " + std::to_string(s) + " head " + std::to_string(hh) +
                 " partial: " + p;
      }
  }
  return "";
}

// The device run's outputs against the host run's (compare_case); `out` gets the device's output.
std::string compare_device(const HostCase& h, const DeviceCase& d, double tol, double& err,
                           std::vector<float>& out, const std::vector<int>& skip_rows = {}) {
  out = download<float>(d.out, h.out.size());
  return compare_case(h, out, download<float>(d.pout, h.partial_out.size()),
                      download<float>(d.plse, h.partial_lse.size()), tol, err, skip_rows);
}

double tolerance(DecodePath p, const Spec& s) { return test::decode_path_tolerance(p, s.dtype); }

struct Tally {
  int passed = 0, failed = 0;
  int runs[5] = {0, 0, 0, 0, 0};
  double max_err[5] = {0, 0, 0, 0, 0};
  bool verbose = false;
  int only = -1;  // a DecodePath: check that path alone (--check --path P); -1: every path
  bool wants(DecodePath p) const { return only < 0 || int(p) == only; }

  void fail(const std::string& what) {
    ++failed;
    std::printf("FAIL %s\n", what.c_str());
  }
  void pass(const std::string& what) {
    ++passed;
    if (verbose) std::printf("ok   %s\n", what.c_str());
  }
};

const DecodePath kPaths[] = {DecodePath::generic, DecodePath::gqa_tc, DecodePath::mla_tc,
                             DecodePath::mla_wgmma};

// For each path wanted that accepts the device case `d` of `h`: `run(path, args)` runs it and
// returns a problem or ""; the tally gets a pass or a failure named `label`, the path and the case
// (an exception is a failure too).
template <class Run>
void for_each_path(HostCase& h, DeviceCase& d, Tally& t, const std::string& label, Run run) {
  for (DecodePath p : kPaths) {
    if (!t.wants(p)) continue;
    const PagedDecodeArgs a = d.args(h);
    if (!cuda::decode_path_supports(a, p, nullptr)) continue;
    const std::string name = label + cuda::decode_path_name(p) + " " + describe(h.s);
    try {
      const std::string problem = run(p, a);
      problem.empty() ? t.pass(name) : t.fail(name + ": " + problem);
    } catch (const std::exception& e) {
      t.fail(name + ": " + e.what());
      (void)cudaGetLastError();
    }
  }
}

// Path `p` on the device case, run eagerly over poisoned outputs, against the host run in `h`.
std::string run_and_compare(const HostCase& h, DeviceCase& d, DecodePath p,
                            const PagedDecodeArgs& a, double& err, std::vector<float>& out,
                            const std::vector<int>& skip_rows = {}) {
  d.reset(h);
  cuda::paged_decode_path(a, p, nullptr);
  BENCH_CUDA(cudaDeviceSynchronize());
  return compare_device(h, d, tolerance(p, h.s), err, out, skip_rows);
}

// Runs every path that accepts the case and compares it with the host run already in `h`.
// `extra` may check more (the whole-tile NaN expectations); it returns a problem or "".
void check_paths(HostCase& h, Tally& t,
                 const std::function<std::string(const std::vector<float>&)>& extra = {}) {
  DeviceCase d(h);
  for_each_path(h, d, t, "", [&](DecodePath p, const PagedDecodeArgs& a) {
    std::vector<float> out;
    double err = 0.0;
    std::string problem = run_and_compare(h, d, p, a, err, out);
    if (problem.empty() && extra) problem = extra(out);
    ++t.runs[int(p)];
    t.max_err[int(p)] = std::max(t.max_err[int(p)], err);
    return problem;
  });
}

// ---- the case families ----

void shapes_and_dtypes(Rng& rng, Tally& t) {
  const int head_dims[] = {128, 12, 64, 5, 24, 40};
  int n = 0;
  for (KvLayout layout : {KvLayout::kv_separate, KvLayout::kv_interleaved})
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3})
      for (int bs : {1, 3, 7, 16, 32})
        for (int ratio : {1, 4, 8})
          for (Plan plan : {Plan::one, Plan::many, Plan::past_end, Plan::engine, Plan::engine_fp8}) {
            if ((n++ % 3) != 0 && dt != DType::bf16) continue;  // thin out: bf16 runs every case
            Spec s;
            s.layout = layout;
            s.dtype = dt;
            s.bs = bs;
            s.kv_heads = 2;
            s.ratio = ratio;
            s.head_dim = dt == DType::bf16 ? (n % 2 ? 128 : 64) : head_dims[n % 6];
            const int rows = (n % 3 == 0) ? 1 : (n % 3 == 1 ? 5 : 23);
            s.lens = test::row_lengths(rng, rows, bs, 6 * bs + 3);
            s.plan = plan;
            s.engine_splits = 1 + n % 5;
            if (dt == DType::fp8_e4m3) s.k_scale = 0.03f, s.v_scale = 0.02f;
            HostCase h = make_case(s, rng);
            h.run_host();
            check_paths(h, t);
          }
}

void long_rows_and_v_dim(Rng& rng, Tally& t) {
  // The GQA fast path over many sub-tiles and splits, every power-of-two block size.
  for (int bs : {1, 2, 4, 8, 16, 32, 64, 128})
    for (Plan plan : {Plan::engine, Plan::many, Plan::one}) {
      Spec s;
      s.bs = bs;
      s.kv_heads = 2;
      s.ratio = 4;
      s.head_dim = 128;
      s.lens = {1, 700, 0, 1500, 257, 64};
      s.plan = plan;
      s.engine_splits = 7;
      if (plan == Plan::many && bs < 8) continue;  // thousands of splits: the host takes long
      HostCase h = make_case(s, rng);
      h.run_host();
      check_paths(h, t);
    }
  // v_dim < head_dim outside MLA (generic only).
  for (DType dt : {DType::f32, DType::bf16}) {
    Spec s;
    s.dtype = dt;
    s.bs = 16;
    s.kv_heads = 2;
    s.ratio = 2;
    s.head_dim = 40;
    s.v_dim = 24;
    s.lens = test::row_lengths(rng, 5, 16, 100);
    s.plan = Plan::engine;
    HostCase h = make_case(s, rng);
    h.run_host();
    check_paths(h, t);
  }
}

void mla_shapes(Rng& rng, Tally& t) {
  int n = 0;
  for (DType dt : {DType::bf16, DType::fp8_e4m3})
    for (int G : {128, 16, 7})
      for (int bs : {64, 16, 8, 1, 128})
        for (Plan plan : {Plan::engine, Plan::past_end}) {
          ++n;
          Spec s;
          s.mla = true;
          s.layout = n % 4 == 0 ? KvLayout::kv_interleaved : KvLayout::kv_separate;
          s.dtype = dt;
          s.bs = bs;
          s.ratio = G;
          s.head_dim = 576;
          s.v_dim = 512;
          const int longest = G == 128 ? 200 : 300;
          s.lens = test::row_lengths(rng, G == 128 ? 3 : 5, bs, longest);
          s.plan = plan;
          s.engine_splits = 1 + n % 4;
          s.aligned_rows = n % 2 == 0;  // with 1 and 3 splits: direct and partial bulk stores
          if (dt == DType::fp8_e4m3) s.k_scale = 0.03f, s.v_scale = 0.025f;
          HostCase h = make_case(s, rng);
          h.run_host();
          check_paths(h, t);
        }
}

// The seed-000 mechanism on every path: a NaN in V of the last block's unused tail reaches the
// output of the heads that read that kv head (and only those); NaN/Inf in K there is masked.
void whole_tile_nan(Rng& rng, Tally& t) {
  const Spec shapes[] = {
      // generic + gqa_tc; generic with an odd block size
      {.layout = KvLayout::kv_interleaved, .bs = 16, .kv_heads = 2, .ratio = 4, .head_dim = 128},
      {.layout = KvLayout::kv_interleaved, .dtype = DType::f32, .bs = 7, .ratio = 2, .head_dim = 12},
      {.bs = 64, .kv_heads = 1, .ratio = 16, .head_dim = 576, .v_dim = 512, .mla = true},
      {.dtype = DType::fp8_e4m3, .kv_heads = 1, .ratio = 16, .head_dim = 576, .v_dim = 512,
       .mla = true, .k_scale = 0.03f, .v_scale = 0.03f}};
  for (const Spec& sh : shapes)
    for (Plan plan : {Plan::one, Plan::many, Plan::past_end}) {
      Spec s = sh;
      s.lens = {2 * sh.bs + 3 - (sh.bs == 7 ? 1 : 0)};  // ends inside its last block
      s.plan = plan;
      HostCase h = make_case(s, rng);
      PagedKv& d = h.cache.desc;
      const int len = s.lens[0];
      const int last = h.table[(len - 1) / sh.bs], tail = (len % sh.bs);  // first unused entry
      const int vd = h.vd, G = sh.ratio;
      // 1. NaN in V feature 5 of an unused tail entry, kv head 0: NaN in heads of kv head 0.
      store_from_f32(d.v, v_offset(d, last, tail, 0, 5), d.dtype, NAN);
      h.run_host();
      check_paths(h, t, [&](const std::vector<float>& out) -> std::string {
        for (int hh = 0; hh < G; ++hh)
          if (!std::isnan(out[hh * vd + 5])) return "stale V NaN did not reach head " + std::to_string(hh);
        if (!sh.mla && !test::all_finite(&out[G * vd], size_t(G) * vd)) return "kv head 1 not finite";
        return "";
      });
      // 2. Clean V there; NaN / Inf in K of tail entries (and, MLA, NaN in a rope feature of the
      //    latent tail, which is K only): masked, output finite and equal to the host's.
      //    (MLA's V is the latent row's first 512 features: only the rope part is K alone.)
      store_from_f32(d.v, v_offset(d, last, tail, 0, 5), d.dtype, 0.0f);
      if (!sh.mla) {
        store_from_f32(d.k, k_offset(d, last, sh.bs - 1, 0, 2), d.dtype, NAN);
        store_from_f32(d.k, k_offset(d, last, sh.bs - 1, 1, 0), d.dtype, INFINITY);
      } else {
        store_from_f32(d.k, k_offset(d, last, tail, 0, 520), d.dtype, NAN);
        store_from_f32(d.k, k_offset(d, last, sh.bs - 1, 0, 575), d.dtype, NAN);
      }
      h.run_host();
      check_paths(h, t, [&](const std::vector<float>& out) -> std::string {
        if (!test::all_finite(out.data(), size_t(h.H) * vd)) return "masked stale K reached the output";
        return "";
      });
    }
}

// A bf16 case of rows `lens` in blocks of 16, planned by the engine's rule with at most `splits`
// splits: GQA 8 q / 2 kv heads of 128, or MLA 16 heads over the 512 + 64 latent.
Spec engine_planned(bool mla, std::vector<int32_t> lens, int splits) {
  return {.dtype = DType::bf16, .bs = 16, .kv_heads = mla ? 1 : 2, .ratio = mla ? 16 : 4,
          .head_dim = mla ? 576 : 128, .v_dim = mla ? 512 : 0, .mla = mla,
          .lens = std::move(lens), .plan = Plan::engine, .engine_splits = splits};
}

// A captured graph must read the plan (split_meta, seq_lens) of replay time, not capture time.
void graph_replay_reads_the_live_plan(Rng& rng, Tally& t) {
  for (bool mla : {false, true}) {
    const Spec s = engine_planned(mla, {150, 40, 0, 97}, 4);
    HostCase h = make_case(s, rng);
    DeviceCase d(h);
    for_each_path(h, d, t, "graph ", [&](DecodePath p, const PagedDecodeArgs& a) {
      // Capture with the original plan and lengths...
      h.s.lens = s.lens;
      h.meta = plan_decode_splits(h.s.lens, s.bs, h.max_splits);
      BENCH_CUDA(cudaMemcpy(d.lens.as(), h.s.lens.data(), d.lens.bytes(), cudaMemcpyHostToDevice));
      BENCH_CUDA(cudaMemcpy(d.meta.as(), h.meta.data(), d.meta.bytes(), cudaMemcpyHostToDevice));
      cudaStream_t st;
      BENCH_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      cudaGraph_t g;
      cudaGraphExec_t ge;
      BENCH_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      cuda::paged_decode_path(a, p, st);
      BENCH_CUDA(cudaStreamEndCapture(st, &g));
      BENCH_CUDA(cudaGraphInstantiate(&ge, g, 0));
      // ...then change them in the persistent buffers (another step), replay, compare.
      // (Shorter rows only: a row longer than what was written would read block 0's NaN.)
      h.s.lens = {3, 33, 0, 97};
      h.meta = plan_decode_splits(h.s.lens, s.bs, h.max_splits);
      h.meta[kDecodeMetaHeader + 2] = h.max_splits;  // padded row with splits: still nothing
      BENCH_CUDA(cudaMemcpy(d.lens.as(), h.s.lens.data(), d.lens.bytes(), cudaMemcpyHostToDevice));
      BENCH_CUDA(cudaMemcpy(d.meta.as(), h.meta.data(), d.meta.bytes(), cudaMemcpyHostToDevice));
      h.run_host();
      d.reset(h);
      BENCH_CUDA(cudaGraphLaunch(ge, st));
      BENCH_CUDA(cudaStreamSynchronize(st));
      BENCH_CUDA(cudaGraphExecDestroy(ge));
      BENCH_CUDA(cudaGraphDestroy(g));
      BENCH_CUDA(cudaStreamDestroy(st));
      std::vector<float> out;
      double err = 0.0;
      return compare_device(h, d, tolerance(p, s), err, out);
    });
  }
}

// Plans the host op rejects (more splits than the workspace) give NaN in that row's out, and
// nothing else changes; a row with seq_len > 0 planned with 0 splits gets zeros, as on the host.
void broken_plans(Rng& rng, Tally& t) {
  for (bool mla : {false, true}) {
    const Spec s = engine_planned(mla, {40, 100, 33, 70}, 3);
    HostCase h = make_case(s, rng);
    h.meta[kDecodeMetaHeader + 2] = 0;  // zeros, host and device
    h.run_host();
    h.meta[kDecodeMetaHeader + 1] = h.max_splits + 1;  // the host throws; the device writes NaN
    DeviceCase d(h);
    for_each_path(h, d, t, "broken plan ", [&](DecodePath p, const PagedDecodeArgs& a) {
      std::vector<float> out;
      double err = 0.0;
      std::string problem = run_and_compare(h, d, p, a, err, out, {1});
      for (int i = 0; problem.empty() && i < h.H * h.vd; ++i)
        if (!std::isnan(out[h.out_stride + i]) || test::is_poison(out[h.out_stride + i]))
          problem = "row planned past the workspace: out[" + std::to_string(i) +
                    "] is not a written NaN";
      return problem;
    });
  }
}

}  // namespace

int run_decode_check(uint64_t seed, bool verbose, const std::string& path) {
  Rng rng(seed);
  Tally t;
  t.verbose = verbose;
  for (DecodePath p : kPaths)
    if (path == cuda::decode_path_name(p)) t.only = int(p);
  std::printf("decode check: every CUDA decode path against host::paged_decode (seed %llu)\n",
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  struct Family {
    const char* name;
    void (*run)(Rng&, Tally&);
  };
  const Family families[] = {{"shapes, layouts, dtypes, plans", shapes_and_dtypes},
                             {"long rows, block sizes, v_dim", long_rows_and_v_dim},
                             {"MLA shapes", mla_shapes},
                             {"whole-tile NaN rule", whole_tile_nan},
                             {"graph replay reads the live plan", graph_replay_reads_the_live_plan},
                             {"broken plans", broken_plans}};
  for (const Family& f : families) {
    const int before = t.failed + t.passed;
    f.run(rng, t);
    std::printf("  %-34s %d runs\n", f.name, t.failed + t.passed - before);
    std::fflush(stdout);
  }
  for (DecodePath p : kPaths)
    if (t.wants(p))
      std::printf("  path %-8s %5d runs, max relative L2 error vs host %.3g (tolerance %s)\n",
                cuda::decode_path_name(p), t.runs[int(p)], t.max_err[int(p)],
                cuda::decode_path_rounds_operands(p) ? "2e-2 bf16 / 5e-3 fp8" : "1e-4");
  // Every path must have run; mla_wgmma only exists on compute capability 9.0 (sm_90a code).
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  const bool hopper = major == 9 && minor == 0;
  for (DecodePath p : kPaths) {
    if (!t.wants(p) || t.runs[int(p)] != 0) continue;
    if (p == DecodePath::mla_wgmma && !hopper)
      std::printf("  path mla_wgmma not run: needs compute capability 9.0, this GPU is %d.%d\n",
                  major, minor);
    else
      t.fail(std::string("path ") + cuda::decode_path_name(p) + " never ran");
  }
  std::printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed;
}

}  // namespace kv::bench
