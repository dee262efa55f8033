// decode_runner.cu — one configuration of kvbench_decode end to end: inputs in device memory
// (random, never zero; block tables of shuffled block ids; several input sets to rotate through
// so that the data is not L2-resident), a correctness check against the generic path, then a
// sweep over max_splits with the engine's split rule (plan_decode_splits), each point timed with
// CUDA events around replays of a captured graph that decodes every input set once.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "kernels/decode_splits.h"
#include "kernels/paged_kv.cuh"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"
#include "kernels/cuda/decode_path.h"
#include "tests/support/decode_tolerance.h"

namespace kv::bench {

double DecodeShape::min_bytes() const {
  const double esz = dtype_size(dtype);
  const double kv_per_token = latent ? double(kv_heads) * head_dim : double(kv_heads) * (head_dim + v_dim);
  return double(batch) * (4.0 * q_heads * head_dim + esz * context * kv_per_token + 4.0 * q_heads * v_dim);
}

namespace {

// Everything for `sets` independent decode calls of one shape in device memory.
struct Inputs {
  DevBuf cache, tables, lens, q, out, pout, plse;
  PagedKv desc;
  int sets = 1, table_stride = 0, max_splits_cap = 1;
  size_t q_set = 0, out_set = 0;  // floats per set
};

size_t cache_bytes(const DecodeShape& s, int64_t blocks) {
  const int64_t page = int64_t(s.block_size) * s.kv_heads * s.head_dim * dtype_size(s.dtype);
  return size_t(page * blocks * (s.latent ? 1 : 2));
}

Inputs make_inputs(const DecodeShape& s, int sets, int max_splits_cap, uint64_t seed,
                   bool shuffled, bool head_major) {
  Inputs in;
  in.sets = sets;
  in.max_splits_cap = max_splits_cap;
  in.table_stride = (s.context + s.block_size - 1) / s.block_size;
  const int64_t blocks = int64_t(sets) * s.batch * in.table_stride + 1;  // + the null block 0
  in.cache = DevBuf(cache_bytes(s, blocks));
  in.desc = make_paged_kv(in.cache.as(), KvLayout::kv_separate, s.dtype, int32_t(blocks), s.block_size,
                          s.kv_heads, s.head_dim);
  if (head_major) {  // --page-layout hnd: within a page [head][entry][feature], same page size
    in.desc.k_stride_head = in.desc.v_stride_head = int64_t(s.block_size) * s.head_dim;
    in.desc.k_stride_token = in.desc.v_stride_token = s.head_dim;
  }
  if (s.latent) {  // one latent page per block; V reads its first v_dim features
    in.desc.v = in.desc.k;
    in.desc.v_stride_block = in.desc.k_stride_block;
    in.desc.v_stride_token = in.desc.k_stride_token;
    in.desc.v_stride_head = in.desc.k_stride_head;
  }
  if (s.dtype == DType::fp8_e4m3) in.desc.k_scale = in.desc.v_scale = s.kv_scale;
  const size_t elems = in.cache.bytes() / dtype_size(s.dtype);
  fill_uniform(in.cache.as(), elems, s.dtype, -1.0f, 1.0f, in.desc.k_scale, seed, nullptr);

  // Shuffled block ids: consecutive tokens of a row live in unrelated blocks, as after churn.
  // Sequential (--tables sequential): a row's blocks are adjacent in memory, the layout a fresh
  // cache gives, to tell the cost of scattered pages from the kernel's own.
  std::vector<int32_t> ids(blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  if (shuffled) std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  in.tables = upload(ids);  // [set][row][table_stride]: exactly the shuffled ids, in order
  in.lens = upload(std::vector<int32_t>(s.batch, s.context));

  in.q_set = size_t(s.batch) * s.q_heads * s.head_dim;
  in.out_set = size_t(s.batch) * s.q_heads * s.v_dim;
  in.q = DevBuf(in.q_set * sets * 4);
  fill_uniform(in.q.as(), in.q_set * sets, DType::f32, -1.0f, 1.0f, 1.0f, seed + 1, nullptr);
  in.out = DevBuf(in.out_set * sets * 4);
  BENCH_CUDA(cudaMemset(in.out.as(), 0xff, in.out.bytes()));  // NaN: unwritten shows
  in.pout = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * s.v_dim * 4);
  in.plse = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * 4);
  BENCH_CUDA(cudaDeviceSynchronize());
  return in;
}

PagedDecodeArgs args_for(const DecodeShape& s, const Inputs& in, int set, const int32_t* meta,
                         int max_splits, int rows) {
  PagedDecodeArgs a;
  a.cache = in.desc;
  a.q = in.q.as<float>() + in.q_set * set;
  a.q_row_stride = int64_t(s.q_heads) * s.head_dim;
  a.out = in.out.as<float>() + in.out_set * set;
  a.out_row_stride = int64_t(s.q_heads) * s.v_dim;
  a.block_table = in.tables.as<int32_t>() + size_t(set) * s.batch * in.table_stride;
  a.block_table_stride = in.table_stride;
  a.seq_lens = in.lens.as<int32_t>();
  a.split_meta = meta;
  a.partial_out = in.pout.as<float>();
  a.partial_lse = in.plse.as<float>();
  a.max_splits = max_splits;
  a.num_rows = rows;
  a.num_q_heads = s.q_heads;
  a.v_dim = s.v_dim;
  a.scale = 1.0f / std::sqrt(float(s.head_dim));
  return a;
}

cuda::DecodePath parse_path(const std::string& p) {
  if (p == "generic") return cuda::DecodePath::generic;
  if (p == "gqa_tc") return cuda::DecodePath::gqa_tc;
  if (p == "mla_tc") return cuda::DecodePath::mla_tc;
  if (p == "mla_wgmma") return cuda::DecodePath::mla_wgmma;
  return cuda::DecodePath::automatic;
}

DevBuf upload_plan(const DecodeShape& s, int max_splits) {
  return upload(plan_decode_splits(std::vector<int32_t>(s.batch, s.context), s.block_size, max_splits));
}

// The path's output for the first `rows` rows of set 0 against the generic path's, relative L2
// per (row, head); also every output of set 0 must be finite (random data has no NaN).
double check_against_generic(const DecodeShape& s, Inputs& in, cuda::DecodePath path,
                             int max_splits, int rows, std::string& problem) {
  DevBuf meta = upload_plan(s, max_splits);
  const PagedDecodeArgs a = args_for(s, in, 0, meta.as<int32_t>(), max_splits, s.batch);
  cuda::paged_decode_path(a, path, nullptr);
  BENCH_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = download<float>(in.out, in.out_set);

  DevBuf ref(size_t(rows) * s.q_heads * s.v_dim * 4);
  DevBuf rp(size_t(rows) * max_splits * s.q_heads * s.v_dim * 4), rl(size_t(rows) * max_splits * s.q_heads * 4);
  PagedDecodeArgs g = args_for(s, in, 0, meta.as<int32_t>(), max_splits, rows);
  g.out = ref.as<float>();
  g.partial_out = rp.as<float>();
  g.partial_lse = rl.as<float>();
  cuda::paged_decode_path(g, cuda::DecodePath::generic, nullptr);
  BENCH_CUDA(cudaDeviceSynchronize());
  const std::vector<float> want = download<float>(ref, size_t(rows) * s.q_heads * s.v_dim);

  for (size_t i = 0; i < got.size(); ++i)
    if (!std::isfinite(got[i])) {
      problem = "non-finite output at element " + std::to_string(i);
      return NAN;
    }
  double worst = 0.0;
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < s.q_heads; ++h) {
      double num = 0.0, den = 0.0;
      const size_t o = (size_t(r) * s.q_heads + h) * s.v_dim;
      for (int i = 0; i < s.v_dim; ++i) {
        const double d = double(got[o + i]) - want[o + i];
        num += d * d;
        den += double(want[o + i]) * want[o + i];
      }
      const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      if (!(err <= worst)) worst = err;  // keeps NaN
    }
  return worst;
}

// Median time of one decode call (microseconds): a graph decodes every input set once; samples
// of R replays each, R chosen so that a sample lasts min_sample_ms.
double time_point(const DecodeShape& s, Inputs& in, cuda::DecodePath path, int max_splits,
                  const RunOptions& opt) {
  DevBuf meta = upload_plan(s, max_splits);
  cudaStream_t st;
  BENCH_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int set = 0; set < in.sets; ++set)
    cuda::paged_decode_path(args_for(s, in, set, meta.as<int32_t>(), max_splits, s.batch), path, st);
  BENCH_CUDA(cudaStreamEndCapture(st, &graph));
  BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  EventTimer timer;
  for (int w = 0; w < 2; ++w) BENCH_CUDA(cudaGraphLaunch(exec, st));  // warm-up
  timer.start(st);
  BENCH_CUDA(cudaGraphLaunch(exec, st));
  const double one_ms = std::max(1e-3, double(timer.stop_ms(st)));
  const int reps = std::max(1, int(std::ceil(opt.min_sample_ms / one_ms)));
  std::vector<double> us;
  for (int i = 0; i < opt.samples; ++i) {
    timer.start(st);
    for (int r = 0; r < reps; ++r) BENCH_CUDA(cudaGraphLaunch(exec, st));
    us.push_back(1e3 * timer.stop_ms(st) / (double(reps) * in.sets));
  }
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(graph));
  BENCH_CUDA(cudaStreamDestroy(st));
  return median(us);
}

}  // namespace

BenchResult run_decode_config(const DecodeShape& s, const RunOptions& opt, double copy_tbps) {
  BenchResult r;
  r.shape = s;
  r.bytes = s.min_bytes();
  const int blocks_per_row = (s.context + s.block_size - 1) / s.block_size;
  // max_splits worth trying: at most one split per block, and no more than 2048 row-splits (16
  // CTAs per SM of an H100/H200 for GQA): past that, splitting only adds merge traffic.
  std::vector<int> splits;
  for (int m : opt.splits)
    if (m >= 1 && m <= blocks_per_row && (m == 1 || int64_t(m) * s.batch <= 2048)) splits.push_back(m);
  if (splits.empty()) splits.push_back(1);
  const int cap = *std::max_element(splits.begin(), splits.end());

  // Input sets: enough to rotate over rotate_bytes, as many as fit in 85% of free memory.
  int dev = 0, l2 = 0;
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const double rotate = opt.rotate_bytes > 0 ? opt.rotate_bytes : std::max(8.0 * l2, 512.0 * (1 << 20));
  const double set_bytes = double(cache_bytes(s, int64_t(s.batch) * blocks_per_row)) +
                           4.0 * s.batch * s.q_heads * (s.head_dim + s.v_dim);
  size_t free_b = 0, total_b = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const double fixed = 4.0 * s.batch * cap * s.q_heads * (s.v_dim + 1) +  // split workspace
                       4.0 * opt.check_rows * 9 * s.q_heads * (s.v_dim + 1);  // generic check
  const double budget = 0.85 * double(free_b) - fixed;
  r.input_sets = int(std::min<double>(64, std::ceil(rotate / set_bytes)));
  r.input_sets = std::max(1, std::min<int>(r.input_sets, int(budget / set_bytes)));
  if (budget < set_bytes) {
    char b[160];
    std::snprintf(b, sizeof b, "needs %.1f GB, %.1f GB free", (set_bytes + fixed) / 1e9, free_b / 1e9);
    r.skipped = b;
    return r;
  }

  try {
    Inputs in = make_inputs(s, r.input_sets, cap, 0x5eed + s.batch * 131 + s.context,
                            opt.shuffled_tables, opt.head_major);
    cuda::DecodePath path = parse_path(opt.path);
    {
      DevBuf meta = upload_plan(s, 1);
      const PagedDecodeArgs a = args_for(s, in, 0, meta.as<int32_t>(), 1, s.batch);
      if (path == cuda::DecodePath::automatic) path = cuda::decode_path_for(a);
      std::string why;
      if (!cuda::decode_path_supports(a, path, &why)) {
        r.error = std::string("path ") + cuda::decode_path_name(path) + " cannot run it: " + why;
        return r;
      }
    }
    r.path = cuda::decode_path_name(path);
    // Correctness once, before timing: a split plan that merges (and one that writes directly).
    r.tolerance = test::decode_path_tolerance(path, s.dtype);
    const int rows = std::min(opt.check_rows, s.batch);
    for (int ms : {std::min(cap, 8), 1}) {
      std::string problem;
      const double err = check_against_generic(s, in, path, ms, rows, problem);
      if (!problem.empty()) r.error = problem + " (max_splits " + std::to_string(ms) + ")";
      if (!(err <= r.max_err)) r.max_err = err;
    }
    if (r.error.empty() && !(r.max_err <= r.tolerance)) {
      char b[160];
      std::snprintf(b, sizeof b, "error vs generic %.3g above tolerance %.3g", r.max_err, r.tolerance);
      r.error = b;
    }
    for (int ms : splits) {
      const double us = time_point(s, in, path, ms, opt);
      r.sweep.push_back({ms, us});
      if (r.best_splits == 0 || us < r.best_us) r.best_us = us, r.best_splits = ms;
    }
    r.tbps = r.bytes / (r.best_us * 1e-6) / 1e12;
    r.copy_fraction = copy_tbps > 0 ? r.tbps / copy_tbps : 0.0;
  } catch (const std::exception& e) {
    r.error = e.what();
    (void)cudaGetLastError();
  }
  return r;
}

}  // namespace kv::bench
