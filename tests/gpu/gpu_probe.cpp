// gpu_probe.cpp — exit 0 when the CUDA runtime sees a GPU this build has kernels for, 1 otherwise
// (also without a driver), saying which, so that shell-driven GPU tests (same_verdicts.sh) skip
// cleanly on a host-only machine or on a GPU the build was not compiled for.
#include <cstdio>
#include <string>

#include "device/cuda/cuda_device.h"

int main() {
  if (!kv::cuda_gpu_present()) {
    std::fprintf(stderr, "gpu_probe: no CUDA GPU visible\n");
    return 1;
  }
  if (const std::string why = kv::cuda_kernel_image_missing(); !why.empty()) {
    std::fprintf(stderr, "gpu_probe: %s: GPU tests skipped\n", why.c_str());
    return 1;
  }
  return 0;
}
