// backend_point.cpp — one grid point of kvbench_backend_decode end to end, in this order:
//   1. inputs (backend_inputs.h), as many sets as rotate past L2 and fit in memory;
//   2. the built-in decode, through cuda::paged_decode (the engine's entry point: its automatic
//      path choice) with the engine's planner (plan_decode_splits_for), timed at each max_splits
//      worth trying; the best is kept, and its output of set 0 is the check's reference;
//   3. the plugin: caps (a refusal is reported, not a failure), plan and workspace sized by its
//      size queries for the best max_splits, paged_decode_plan on the host (timed: median of
//      plan_repeats calls including its copies, stream synchronised), one paged_decode of set 0
//      compared with the built-in output, then paged_decode alone timed: the plan is made once
//      per point and not re-run between timed calls.
// A plugin error marks the point and returns; the caller goes on with the next one.
#include "tests/bench/backend_point.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/decode_path.h"
#include "kernels/cuda/decode_path_env.h"
#include "kernels/decode_splits.h"
#include "tests/bench/backend_inputs.h"
#include "tests/bench/pass_timer.h"
#include "tests/support/decode_tolerance.h"

namespace kv::bench {
namespace {

DevBuf upload_plan(const DecodeShape& s, int max_splits) {
  return upload(plan_decode_splits_for(s.dtype, std::vector<int32_t>(s.batch, s.context),
                                       s.block_size, max_splits));
}

// The path cuda::paged_decode takes for `a`: KVCHECK_DECODE_PATH=generic forces the generic one.
cuda::DecodePath engine_path(const PagedDecodeArgs& a) {
  if (cuda::parse_decode_path_env(std::getenv(cuda::kDecodePathEnv)) ==
      cuda::DecodePathEnv::generic)
    return cuda::DecodePath::generic;
  return cuda::decode_path_for(a);
}

void fail(BackendPoint& p, const std::string& why) {
  p.status = why;
  p.failed = true;
}

// Step 2: the built-in sweep; the best max_splits's output of set 0 is left in `want`.
bool run_builtin(const DecodeShape& s, BackendInputs& in, const std::vector<int>& splits,
                 const BackendRunOptions& opt, BackendPoint& p, std::vector<float>& want) {
  {
    DevBuf meta = upload_plan(s, 1);
    const cuda::DecodePath path =
        engine_path(decode_args(s, in, 0, meta.as<int32_t>(), 1, s.batch));
    p.builtin_path = cuda::decode_path_name(path);
    // bf16 outputs (the plugin's) against float32 ones: at least 1e-2, as `kvcheck conform`
    // holds a bf16 plugin; the MLA paths' own rounding allows 2e-2 (decode_tolerance.h).
    p.tolerance = std::max(1e-2, test::decode_path_tolerance(path, s.dtype));
  }
  for (int ms : splits) {
    DevBuf meta = upload_plan(s, ms);
    const Pass pass = [&](cudaStream_t st) {
      for (int set = 0; set < in.sets; ++set)
        cuda::paged_decode(decode_args(s, in, set, meta.as<int32_t>(), ms, s.batch), st);
      return std::string();
    };
    const PassTime t = time_pass(pass, in.sets, opt.timing, opt);
    if (!t.error.empty()) {
      fail(p, "built-in decode failed (max_splits " + std::to_string(ms) + "): " + t.error);
      return false;
    }
    if (p.builtin_splits == 0 || t.us < p.builtin_us) p.builtin_us = t.us, p.builtin_splits = ms;
  }
  poison_outputs(in);
  DevBuf meta = upload_plan(s, p.builtin_splits);
  cuda::paged_decode(decode_args(s, in, 0, meta.as<int32_t>(), p.builtin_splits, s.batch),
                     nullptr);
  BENCH_CUDA(cudaDeviceSynchronize());
  want = builtin_out_host(in);
  return true;
}

// Step 3: plan (timed on the host), check against `want`, time the decode alone.
void run_plugin(const DecodeShape& s, BackendInputs& in, PluginDecoder& plugin,
                const BackendRunOptions& opt, BackendPoint& p, const std::vector<float>& want) {
  plugin.prepare(s, in.table_stride, p.builtin_splits);
  p.plan_bytes = plugin.plan_bytes();
  p.workspace_bytes = plugin.workspace_bytes();
  cudaStream_t st;
  BENCH_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<double> plan_us;
  std::string err;
  for (int i = 0; i < std::max(1, opt.plan_repeats) && err.empty() && plugin.has_plan(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    err = plugin.plan(s, st);
    BENCH_CUDA(cudaStreamSynchronize(st));
    const auto t1 = std::chrono::steady_clock::now();
    plan_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  p.plan_us = median(plan_us);
  if (err.empty()) {
    poison_outputs(in);
    err = plugin.decode(plugin_args(s, in, 0), st);
    BENCH_CUDA(cudaStreamSynchronize(st));
  }
  BENCH_CUDA(cudaStreamDestroy(st));
  if (!err.empty()) return fail(p, "plugin error: " + err);

  std::string problem;
  p.max_err = max_rel_err(plugin_out_host(in), want, s.batch, s.q_heads, s.v_dim, problem);
  if (!problem.empty()) {
    fail(p, "plugin output: " + problem);
  } else if (!(p.max_err <= p.tolerance)) {
    char b[160];
    std::snprintf(b, sizeof b, "MISMATCH: max rel err %.3g above %.3g", p.max_err, p.tolerance);
    fail(p, b);
  }
  // Timed even when wrong: a fast wrong answer stays visible beside its error.
  const Pass pass = [&](cudaStream_t stream) {
    for (int set = 0; set < in.sets; ++set) {
      std::string e = plugin.decode(plugin_args(s, in, set), stream);
      if (!e.empty()) return e;
    }
    return std::string();
  };
  const PassTime t = time_pass(pass, in.sets, opt.timing, opt);
  if (!t.error.empty()) return fail(p, "plugin error while timed: " + t.error);
  p.plugin_us = t.us;
}

}  // namespace

BackendPoint run_backend_point(const DecodeShape& s, PluginDecoder& plugin,
                               const BackendRunOptions& opt) {
  BackendPoint p;
  p.shape = s;
  p.kv_bytes = kv_read_bytes(s);
  const std::vector<int> splits = splits_worth_trying(s, opt.splits);
  const int cap = *std::max_element(splits.begin(), splits.end());
  const std::string refusal = plugin.refusal(s);
  const double fixed =
      double(kv::decode_workspace_bytes(s.batch, s.q_heads, s.v_dim, cap)) +
      (refusal.empty() ? double(plugin.buffer_bytes(s, table_stride_of(s), cap)) : 0.0) +
      256.0 * (1 << 20);  // graphs, the plans' staging, the runtimes' own
  p.input_sets =
      input_set_count(input_set_bytes(s, plugin.io_dtype()), opt.rotate_bytes, fixed);
  if (p.input_sets == 0) {
    p.status = "skipped: does not fit in device memory";
    return p;
  }
  try {
    BackendInputs in = make_backend_inputs(s, p.input_sets, cap, plugin.io_dtype(),
                                           0x5eed + uint64_t(s.batch) * 131 + s.context);
    std::vector<float> want;
    if (!run_builtin(s, in, splits, opt, p, want)) return p;
    if (!refusal.empty()) {
      p.status = "plugin cannot run it: " + refusal;
      return p;
    }
    run_plugin(s, in, plugin, opt, p, want);
  } catch (const std::exception& e) {
    fail(p, e.what());
    (void)cudaGetLastError();
  }
  return p;
}

}  // namespace kv::bench
