// backend_report.cpp — kvbench_backend_decode's host-only parts (backend_decode.h): the grid, the
// bytes a decode reads, the comparison of the two outputs, the markdown report, and --self-test,
// which checks them on known inputs without a GPU.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tests/bench/backend_decode.h"

namespace kv::bench {
namespace {

std::string fmt(const char* f, double v) {
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string kind_label(const DecodeShape& s) {
  return s.kind + " " + std::to_string(s.q_heads) + "/" + std::to_string(s.kv_heads) + " x " +
         (s.latent ? std::to_string(s.v_dim) + "+" + std::to_string(s.head_dim - s.v_dim)
                   : std::to_string(s.head_dim)) +
         ", block " + std::to_string(s.block_size);
}

std::string gbps(double bytes, double us) { return us > 0 ? fmt("%.0f", bytes / us / 1e3) : "-"; }

}  // namespace

double kv_read_bytes(const DecodeShape& s) {
  const double per_token =
      s.latent ? double(s.kv_heads) * s.head_dim : double(s.kv_heads) * 2.0 * s.head_dim;
  return double(s.batch) * s.context * per_token * dtype_size(s.dtype);
}

std::vector<DecodeShape> backend_grid(const std::vector<int>& batches,
                                      const std::vector<int>& contexts,
                                      const std::vector<int>& mla_heads, const std::string& only) {
  std::vector<DecodeShape> v;
  auto add = [&](DecodeShape s) {
    for (int b : batches)
      for (int ctx : contexts) {
        s.batch = b, s.context = ctx;
        v.push_back(s);
      }
  };
  if (only != "mla") {
    DecodeShape s;  // scenarios/gpu/llama-gqa-bf16.json's model and cache
    s.kind = "gqa";
    s.dtype = DType::bf16;
    s.q_heads = 32, s.kv_heads = 8, s.head_dim = 128, s.v_dim = 128, s.block_size = 16;
    add(s);
  }
  if (only != "gqa")
    for (int h : mla_heads) {
      DecodeShape s;  // scenarios/gpu/deepseek-mla-bf16.json's latent cache, h query heads
      s.kind = "mla";
      s.dtype = DType::bf16;
      s.q_heads = h, s.kv_heads = 1, s.head_dim = 576, s.v_dim = 512, s.block_size = 64;
      s.latent = true;
      add(s);
    }
  return v;
}

double max_rel_err(const std::vector<float>& got, const std::vector<float>& want, int rows,
                   int heads, int dim, std::string& problem) {
  const size_t n = size_t(rows) * heads * dim;
  if (got.size() < n || want.size() < n) {
    problem = "output sizes differ from rows x heads x dim";
    return NAN;
  }
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      problem = std::string("non-finite element ") + std::to_string(i) + " in the " +
                (std::isfinite(got[i]) ? "built-in" : "plugin") + " output (" +
                fmt("%g", std::isfinite(got[i]) ? want[i] : got[i]) + ")";
      return NAN;
    }
  double worst = 0.0;
  for (size_t o = 0; o < n; o += dim) {
    double num = 0.0, den = 0.0;
    for (int i = 0; i < dim; ++i) {
      const double d = double(got[o + i]) - want[o + i];
      num += d * d;
      den += double(want[o + i]) * want[o + i];
    }
    const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (err > worst) worst = err;
  }
  return worst;
}

std::string backend_markdown(const BackendRunInfo& info, const std::vector<BackendPoint>& pts) {
  std::ostringstream o;
  const bool graph = info.timing == TimingMode::graph;
  o << "Device: " << info.device << "; CUDA driver API " << info.driver_version / 1000 << "."
    << info.driver_version % 1000 / 10 << ", this binary's runtime " << info.runtime_version / 1000
    << "." << info.runtime_version % 1000 / 10 << ".\n";
  o << "Plugin: `" << info.plugin_name << "` " << info.plugin_version << " (" << info.plugin_path
    << "; io " << info.plugin_io_dtype << ", graphs " << info.plugin_graphs << ").\n\n";
  o << "How: both sides read the same bf16 paged cache, shuffled block tables and q (rounded to "
       "the plugin's io dtype, float32 for the built-in). Built-in: cuda::paged_decode (the "
       "engine's path choice) with the engine's split planner, at the best max_splits of the "
       "sweep, which the plugin also gets as its hint. Plugin: paged_decode_plan runs once per "
       "point on the host before timing (plan us: median of its calls, with its copies, stream "
       "synchronised); the timed region is paged_decode alone, with no plan between calls, and "
       "without the float32 <-> io-dtype conversions kvcheck's engine adds around it. Timing: "
    << (graph ? "a CUDA graph of one decode per input set, replayed"
              : "eager launches of one decode per input set")
    << ", CUDA events, median of " << info.samples
    << " samples of >= 2 ms; no explicit L2 flush: the input sets rotated through (sets) hold "
       ">= max(8 x L2, 512 MB), so K/V comes from HBM. GB/s: K/V bytes read / time. "
       "plugin / built-in: time ratio (< 1: the plugin is faster). max rel err: plugin vs "
       "built-in output of the same decode, relative L2 per (row, head), max over all rows.\n\n";
  o << "| shape | batch | context | K/V MB | sets | built-in path | max_splits | built-in us "
       "| built-in GB/s | plugin us | plugin GB/s | plugin / built-in | plan us | max rel err "
       "| status |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const BackendPoint& p : pts) {
    const bool both = p.builtin_us > 0 && p.plugin_us > 0;
    o << "| " << kind_label(p.shape) << " | " << p.shape.batch << " | " << p.shape.context
      << " | " << fmt("%.1f", p.kv_bytes / 1e6) << " | " << p.input_sets << " | "
      << (p.builtin_path.empty() ? "-" : p.builtin_path) << " | " << p.builtin_splits << " | "
      << (p.builtin_us > 0 ? fmt("%.1f", p.builtin_us) : "-") << " | "
      << gbps(p.kv_bytes, p.builtin_us) << " | "
      << (p.plugin_us > 0 ? fmt("%.1f", p.plugin_us) : "-") << " | "
      << gbps(p.kv_bytes, p.plugin_us) << " | "
      << (both ? fmt("%.2f", p.plugin_us / p.builtin_us) : "-") << " | "
      << (p.plan_us > 0 ? fmt("%.0f", p.plan_us) : "-") << " | "
      << (p.max_err >= 0 ? fmt("%.2e", p.max_err) : std::isnan(p.max_err) ? "NaN" : "-")
      << " | " << (p.failed ? "**" + p.status + "**" : p.status) << " |\n";
  }
  bool any = false;
  for (const BackendPoint& p : pts)
    if (p.failed) {
      if (!any) o << "\nFailures:\n";
      any = true;
      o << "- " << kind_label(p.shape) << ", batch " << p.shape.batch << ", context "
        << p.shape.context << ": " << p.status << "\n";
    }
  return o.str();
}

int backend_self_test() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += ok ? 0 : 1;
  };
  const std::vector<DecodeShape> g = backend_grid({1, 16}, {1024, 8192}, {16, 128}, "");
  expect(g.size() == 12, "grid: 2 batches x 2 contexts x (gqa + 2 MLA head counts)");
  expect(backend_grid({1}, {1024}, {16, 64}, "gqa").size() == 1, "grid: --only gqa");
  expect(backend_grid({1}, {1024}, {16, 64}, "mla").size() == 2, "grid: --only mla");
  expect(g[0].kind == "gqa" && g[0].q_heads == 32 && g[0].kv_heads == 8 && g[0].head_dim == 128 &&
             g[0].block_size == 16 && g[1].context == 8192 && g[2].batch == 16,
         "grid: the llama-gqa-bf16 shape first, contexts innermost");
  expect(g[4].latent && g[4].q_heads == 16 && g[4].head_dim == 576 && g[4].v_dim == 512 &&
             g[8].q_heads == 128,
         "grid: MLA 512 + 64 at each head count");
  expect(kv_read_bytes(g[0]) == 1024.0 * 8 * 2 * 128 * 2, "bytes: GQA reads K and V");
  expect(kv_read_bytes(g[4]) == 1024.0 * 576 * 2, "bytes: MLA reads the latent row once");

  std::string problem;
  std::vector<float> want(2 * 2 * 4, 1.0f), got = want;
  expect(max_rel_err(got, want, 2, 2, 4, problem) == 0.0 && problem.empty(), "err: identical");
  got[5] = 1.0f + 2.0f;  // row 0, head 1: |d| = 2 over |want| = 2
  const double e = max_rel_err(got, want, 2, 2, 4, problem);
  expect(std::fabs(e - 1.0) < 1e-12 && problem.empty(), "err: relative L2 per (row, head)");
  got = want;
  got[7] = NAN;
  expect(std::isnan(max_rel_err(got, want, 2, 2, 4, problem)) && !problem.empty(),
         "err: a NaN in the plugin output is reported");
  problem.clear();
  got = want;
  want[3] = INFINITY;
  expect(std::isnan(max_rel_err(got, want, 2, 2, 4, problem)) &&
             problem.find("built-in") != std::string::npos,
         "err: an Inf in the built-in output is named as such");

  BackendRunInfo info;
  info.plugin_name = "flashinfer";
  BackendPoint ok, bad;
  ok.shape = bad.shape = g[0];
  ok.kv_bytes = kv_read_bytes(g[0]);
  ok.builtin_us = 10.0, ok.plugin_us = 5.0, ok.max_err = 1e-3, ok.builtin_splits = 4;
  bad.failed = true, bad.status = "plugin error: paged_decode: boom";
  const std::string md = backend_markdown(info, {ok, bad});
  expect(md.find("| 10.0 | 419 | 5.0 | 839 | 0.50 |") != std::string::npos,
         "report: times, GB/s and the ratio side by side");
  expect(md.find("**plugin error: paged_decode: boom**") != std::string::npos &&
             md.find("Failures:") != std::string::npos,
         "report: a failed point is marked and listed");
  std::printf("%d failed\n", failures);
  return failures;
}

}  // namespace kv::bench
