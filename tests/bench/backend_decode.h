// backend_decode.h — the pieces of kvbench_backend_decode: a backend plugin's paged_decode
// against kvcheck's built-in CUDA decode on the same bf16 paged cache, block tables and q, point
// by point over a batch x context grid. Plain data here; the plugin (plugin_decoder.h), the
// shared inputs (backend_inputs.cu), the timing (pass_timer.h), one grid point end to end
// (backend_point.cpp), the report and the host-only helpers (backend_report.cpp), the command
// line (backend_decode_main.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/bench/decode_bench.h"

namespace kv::bench {

// How the two sides are timed: a CUDA graph of one decode per input set, replayed (the engine
// replays decode steps as graphs), or the same calls launched eagerly.
enum class TimingMode { graph, eager };

struct BackendRunOptions {
  std::vector<int> splits = {1, 2, 4, 8, 16, 32, 64, 128};  // built-in max_splits tried
  int samples = 7;             // timing samples per side; the median is kept
  double min_sample_ms = 2.0;  // replays per sample: enough for this long
  double rotate_bytes = 0.0;   // input bytes rotated over (0: 8 x L2, at least 512 MB)
  int plan_repeats = 5;        // host plan calls timed (the last one's plan is used)
  TimingMode timing = TimingMode::graph;
};

// One grid point's outcome. `status` is "ok", or says what went wrong; a point whose plugin side
// failed keeps its built-in figures.
struct BackendPoint {
  DecodeShape shape;
  std::string status = "ok";
  bool failed = false;        // a plugin error, a mismatch or a built-in failure (exit 1)
  int input_sets = 0;         // rotated through so the data is not L2-resident
  double kv_bytes = 0.0;      // K/V (MLA: latent) bytes one decode reads
  std::string builtin_path;   // the path cuda::paged_decode takes ("gqa_tc", "mla_wgmma" ...)
  int builtin_splits = 0;     // the max_splits of the best built-in time (also the plugin's)
  double builtin_us = 0.0;    // median per decode call
  double plugin_us = 0.0;
  double plan_us = 0.0;       // median host time of paged_decode_plan (+ its copies); 0: no plan
  double max_err = -1.0;      // plugin vs built-in, relative L2 per (row, head), max; <0 not run
  double tolerance = 0.0;
  size_t plan_bytes = 0, workspace_bytes = 0;  // what the plugin's size queries answered
};

// What the report says about the run, besides the points.
struct BackendRunInfo {
  std::string device;         // "NVIDIA H100 80GB HBM3, 132 SMs, 50 MB L2"
  int driver_version = 0;     // cudaDriverGetVersion (e.g. 12080)
  int runtime_version = 0;    // cudaRuntimeGetVersion of this binary
  std::string plugin_path, plugin_name, plugin_version, plugin_io_dtype, plugin_graphs;
  TimingMode timing = TimingMode::graph;
  int samples = 0;
};

// ---- host-only helpers (backend_report.cpp): no GPU needed, --self-test runs them ----

// K/V bytes one decode of `s` reads: every attended element once (MLA: the latent row once).
double kv_read_bytes(const DecodeShape& s);

// The grid: the GQA shape of scenarios/gpu/llama-gqa-bf16.json (32 q / 8 kv heads, head_dim
// 128, block 16) and the MLA shape 512 + 64 (one latent head, block 64) at each of mla_heads,
// each over batches x contexts; bf16 caches. only: "", "gqa" or "mla".
std::vector<DecodeShape> backend_grid(const std::vector<int>& batches,
                                      const std::vector<int>& contexts,
                                      const std::vector<int>& mla_heads, const std::string& only);

// Outputs [rows][heads][dim] against each other: the largest relative L2 per (row, head) of `got`
// against `want` (NaN if either has a non-finite element; then `problem` names the first).
double max_rel_err(const std::vector<float>& got, const std::vector<float>& want, int rows,
                   int heads, int dim, std::string& problem);

// The markdown report: run facts, then one table row per point (plugin and built-in side by
// side), then the failures.
std::string backend_markdown(const BackendRunInfo& info, const std::vector<BackendPoint>& pts);

// --self-test: the helpers above on known inputs; returns the failure count.
int backend_self_test();

}  // namespace kv::bench
