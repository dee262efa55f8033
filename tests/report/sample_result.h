// sample_result.h — a RunResult with every field set to a distinct value, for the report tests.
#pragma once

#include "result/run_result.h"

namespace kv::test {

// A GPU as the CUDA device describes one.
inline GpuInfo sample_gpu() {
  return GpuInfo{.ordinal = 1,
                 .name = "NVIDIA H100 80GB HBM3",
                 .compute_capability = "9.0",
                 .total_memory_bytes = 85'017'821'184ull,
                 .sm_count = 132,
                 .cuda_runtime_version = "13.0",
                 .cuda_driver_version = "13.1",
                 .nvidia_driver_version = "580.159.04"};
}

inline RunResult sample_result() {
  RunResult r;
  r.scenario = "sample";
  r.scenario_path = "scenarios/sample.json";
  r.device = "host";
  r.device_info = DeviceInfo{
      .kind = "host", .cpu_model = "Sample CPU 9000", .hardware_threads = 48, .gpu = {}};
  r.seed = 1234567890123ull;
  r.regressions = {"new-blocks-not-zeroed", "padded-rows-in-reduction"};
  r.expected = Expectation::corrupt;
  r.verdict = Verdict::corrupt;
  r.tolerance = 0.02;
  r.reference_mode = ReferenceMode::full;
  EpochStats e1;
  e1.epoch = 1;
  e1.requests = 8;
  e1.checked_requests = 8;
  e1.clean_requests = 8;
  e1.clean_request_fraction = 1.0;
  e1.nonfinite_outputs = 0;
  e1.max_rel_error = 0.0031;
  e1.steps = 41;
  e1.graph_replays = 30;
  e1.preemptions = 2;
  e1.tokens = 300;
  e1.prefix_hit_blocks = 5;
  e1.blocks_allocated = 77;
  e1.peak_cached_tokens = 1234;
  e1.seconds = 0.0123;
  e1.check_seconds = 0.004;
  e1.forward_seconds = 0.0061;
  EpochStats e2 = e1;
  e2.epoch = 2;
  e2.clean_requests = 3;
  e2.clean_request_fraction = 0.375;
  e2.nonfinite_outputs = 123456789012;
  e2.max_rel_error = std::numeric_limits<double>::quiet_NaN();
  e2.first_bad_step = 7;
  r.epochs = {e1, e2};
  r.first_failure = Failure{.epoch = 2, .step = 7, .request = 3, .position = 17, .layer = 0,
                            .head = 1, .site = CheckSite::decode, .check = "nonfinite",
                            .value = std::numeric_limits<double>::quiet_NaN(),
                            .tolerance = 0.02, .padded_batch = true,
                            .detail = "row 3 of a replay padded to 4"};
  r.seconds = 0.5;
  return r;
}

}  // namespace kv::test
