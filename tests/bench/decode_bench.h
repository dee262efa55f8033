// decode_bench.h — the pieces of kvbench_decode: the --check mode (decode_check.cu), one benchmark
// configuration end to end (decode_runner.cu), and the report (bench_report.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.cuh"

namespace kv::bench {

// Every CUDA decode path (or only `path`, by its name; "automatic": all) against
// host::paged_decode on random shapes; returns the failure count.
int run_decode_check(uint64_t seed, bool verbose, const std::string& path);

// One decode configuration of the benchmark.
struct DecodeShape {
  std::string kind;  // "gqa" or "mla"
  DType dtype = DType::bf16;
  int batch = 1, context = 1024;
  int q_heads = 32, kv_heads = 8, head_dim = 128, v_dim = 128, block_size = 16;
  bool latent = false;     // MLA: V is the first v_dim features of the cached latent row
  float kv_scale = 1.0f;   // fp8 dequantisation scale

  // Bytes the op must move at least: q and out (float32, as the op's interface has them) and
  // every attended K/V element once (MLA: the latent row once).
  double min_bytes() const;
};

struct SweepPoint {
  int max_splits = 0;
  double us = 0.0;
};

struct BenchResult {
  DecodeShape shape;
  std::string path;          // decode path that ran ("gqa_tc", "mla_tc", "generic")
  std::string skipped;       // non-empty: not run, and why
  std::string error;         // non-empty: failed (exception or wrong result)
  int input_sets = 1;        // rotated through so the data is not L2-resident
  double bytes = 0.0;
  double best_us = 0.0;
  int best_splits = 0;
  double tbps = 0.0, copy_fraction = 0.0;
  double max_err = 0.0;      // vs the generic path, relative L2 per (row, head), checked rows
  double tolerance = 0.0;
  std::vector<SweepPoint> sweep;
};

struct RunOptions {
  std::vector<int> splits = {1, 2, 4, 8, 16, 32, 64, 128};
  int samples = 7;               // timing samples per point; the median is kept
  double min_sample_ms = 2.0;    // replays per sample: enough for this long
  double rotate_bytes = 0.0;     // input bytes to rotate over (0: 8 x L2, at least 512 MB)
  std::string path = "automatic";
  int check_rows = 2;            // rows compared with the generic path
  bool shuffled_tables = true;   // false: each row's blocks in ascending, adjacent ids
  bool head_major = false;       // true: pages [head][entry][feature] (HND) instead of NHD
};

BenchResult run_decode_config(const DecodeShape& shape, const RunOptions& opt, double copy_tbps);

struct DeviceInfo {
  std::string name;
  int sms = 0, l2_bytes = 0;
  double mem_gib = 0.0;
  double copy_tbps = 0.0;  // device-to-device copy, bytes read + written, median
  double read_tbps = 0.0;  // streaming read, bytes read (decode's traffic is read-only)
};

std::string results_markdown(const DeviceInfo& dev, const std::vector<BenchResult>& results);
void write_results_json(const std::string& path, const DeviceInfo& dev,
                        const std::vector<BenchResult>& results);

}  // namespace kv::bench
