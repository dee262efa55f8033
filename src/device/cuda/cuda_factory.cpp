// cuda_factory.cpp — the entry points src/cli/device_factory.cpp uses: is there a GPU, why the
// driver could not start, and a CudaDevice on it. Kept apart from CudaDevice so the probes are
// obviously free of side effects.
#include <memory>
#include <string>

#include "util/cuda_check.h"
#include "device/cuda/cuda_device.h"

namespace kv {

int cuda_gpu_count() {
  try {
    int n = 0;
    // Without a driver (or with one too old for this runtime) this returns an error such as
    // cudaErrorNoDevice or cudaErrorInsufficientDriver instead of a count: no GPU for kvcheck.
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  } catch (...) {
    return 0;
  }
}

bool cuda_gpu_present() { return cuda_gpu_count() > 0; }

std::string cuda_start_failure() {
  try {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    (void)cudaGetLastError();
    return cuda_detail::is_start_failure(e) ? cuda_detail::describe(e, "init", "cudaGetDeviceCount")
                                            : std::string();
  } catch (...) {
    return std::string();
  }
}

std::unique_ptr<Device> make_cuda_device(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

}  // namespace kv
