// gpu_probe.cpp — exit 0 when the CUDA runtime sees a GPU, 1 otherwise (also without a driver), so
// that shell-driven GPU tests (same_verdicts.sh) can skip cleanly on a host-only machine.
#include <cstdio>

#include "device/cuda/cuda_device.h"

int main() {
  if (kv::cuda_gpu_present()) return 0;
  std::fprintf(stderr, "gpu_probe: no CUDA GPU visible\n");
  return 1;
}
