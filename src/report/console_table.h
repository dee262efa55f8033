// console_table.h — the human summary of a run, hyperfine-style: a header line, an aligned
// per-epoch table, what the run exercised, a one-line verdict and, when something failed, where it
// first failed.
//
//   scenario: smoke (scenarios/smoke.json)
//   device: host   seed: 7   regressions: none   tolerance: 2.00e-02
//   gpu: NVIDIA H100 (cc 9.0, 132 SMs, 79.1 GiB)   driver 580.159.04 (CUDA 13.0), runtime 13.0
//                                                    (only on the CUDA device)
//   reference: sampled, 8 requests per epoch          (sampled mode, or a reference not on the
//                                                      host: "full on cuda")
//
//     epoch  requests   clean  non-finite  max rel err  first bad step  steps     time
//         1         8  100.0%           0     3.10e-03               -     41  12.3 ms
//
//   coverage: blocks recycled 0 (0.62 pool turnovers), graph replays 0, ...   (report/coverage.h)
//     not reached: REGRESSION needs ..., but ...   (per coverage gap, if any)
//   verdict: clean (expected clean) — OK
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "result/run_result.h"

namespace kv {

struct ConsoleStyle {
  bool colour = false;  // ANSI green/red verdict
};

// Colour only when `os` is std::cout or std::cerr attached to a terminal and NO_COLOR is unset
// (https://no-color.org): piped output and files stay plain.
ConsoleStyle console_style_for(const std::ostream& os);

// Right-aligns every column to its widest cell (header included); rows are cells, not numbers, so
// the caller decides the spelling. Each line starts with `indent` spaces.
void print_aligned(std::ostream& os, const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows, int indent = 2);

// The one-line verdict and, if any, the first-failure line.
std::string verdict_line(const RunResult& r, const ConsoleStyle& style);
std::string failure_line(const Failure& f);
// The header's GPU line: the card (compute capability, SMs, memory), the NVIDIA driver with the
// newest CUDA it supports, and the CUDA runtime kvcheck runs.
std::string gpu_line(const GpuInfo& g);

void print_run(std::ostream& os, const RunResult& r, const ConsoleStyle& style);

}  // namespace kv
