// bench_cli.h — what the benchmarks' command lines share (kvbench_decode, kvbench_backend_decode):
// comma-separated number lists, whether a GPU is visible (exit 77 without one, ctest's skip
// code), and main's last word on an exception.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace kv::bench {

inline std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::atoi(item.c_str()));
  return v;
}

// Whether the CUDA runtime sees a GPU; false also without a driver (cudaGetDeviceCount then fails
// with cudaErrorNoDevice, cudaErrorInsufficientDriver, ...).
inline bool gpu_visible() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

// `run()`'s exit status; an exception escaping it is printed as "tool: what" and exits 1.
template <class Run>
int run_main(const char* tool, Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace kv::bench
