// decode_runner.cu — one configuration of kvbench_decode end to end: inputs in device memory
// (random, never zero; block tables of shuffled block ids; several input sets to rotate through
// so that the data is not L2-resident), a correctness check against the generic path, then a
// sweep over max_splits with the engine's split rule (plan_decode_splits), each point timed with
// CUDA events around replays of a captured graph that decodes every input set once.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernels/decode_splits.h"
#include "kernels/paged_kv.cuh"
#include "tests/bench/decode_inputs.h"
#include "kernels/cuda/decode_path.h"
#include "tests/support/decode_tolerance.h"

namespace kv::bench {

double DecodeShape::min_bytes() const {
  const double esz = dtype_size(dtype);
  const double kv_per_token = latent ? double(kv_heads) * head_dim : double(kv_heads) * (head_dim + v_dim);
  return double(batch) * (4.0 * q_heads * head_dim + esz * context * kv_per_token + 4.0 * q_heads * v_dim);
}

namespace {

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
double check_against_generic(const DecodeShape& s, DecodeInputs& in, cuda::DecodePath path,
                             int max_splits, int rows, std::string& problem) {
  DevBuf meta = upload_plan(s, max_splits);
  const PagedDecodeArgs a = decode_args(s, in, 0, meta.as<int32_t>(), max_splits, s.batch);
  cuda::paged_decode_path(a, path, nullptr);
  BENCH_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = download<float>(in.out, in.out_set);

  DevBuf ref(size_t(rows) * s.q_heads * s.v_dim * 4);
  DevBuf rp(size_t(rows) * max_splits * s.q_heads * s.v_dim * 4), rl(size_t(rows) * max_splits * s.q_heads * 4);
  PagedDecodeArgs g = decode_args(s, in, 0, meta.as<int32_t>(), max_splits, rows);
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
double time_point(const DecodeShape& s, DecodeInputs& in, cuda::DecodePath path, int max_splits,
                  const RunOptions& opt) {
  DevBuf meta = upload_plan(s, max_splits);
  cudaStream_t st;
  BENCH_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int set = 0; set < in.sets; ++set)
    cuda::paged_decode_path(decode_args(s, in, set, meta.as<int32_t>(), max_splits, s.batch), path, st);
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
  const std::vector<int> splits = splits_worth_trying(s, opt.splits);
  const int cap = *std::max_element(splits.begin(), splits.end());

  const double set_bytes = double(cache_bytes(s, int64_t(s.batch) * table_stride_of(s))) +
                           4.0 * s.batch * s.q_heads * (s.head_dim + s.v_dim);
  const double fixed = 4.0 * s.batch * cap * s.q_heads * (s.v_dim + 1) +  // split workspace
                       4.0 * opt.check_rows * 9 * s.q_heads * (s.v_dim + 1);  // generic check
  r.input_sets = input_set_count(set_bytes, opt.rotate_bytes, fixed);
  if (r.input_sets == 0) {
    size_t free_b = 0, total_b = 0;
    BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
    char b[160];
    std::snprintf(b, sizeof b, "needs %.1f GB, %.1f GB free", (set_bytes + fixed) / 1e9, free_b / 1e9);
    r.skipped = b;
    return r;
  }

  try {
    DecodeInputs in = make_decode_inputs(s, r.input_sets, cap,
                                         0x5eed + s.batch * 131 + s.context, opt.shuffled_tables,
                                         opt.head_major);
    cuda::DecodePath path = parse_path(opt.path);
    {
      DevBuf meta = upload_plan(s, 1);
      const PagedDecodeArgs a = decode_args(s, in, 0, meta.as<int32_t>(), 1, s.batch);
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
