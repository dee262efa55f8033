// launch_error.h — what a launcher of kernels/cuda throws when the CUDA runtime refuses to run a
// kernel: the launch itself failed, or a kernel attribute it needs (more shared memory) could not
// be set. The message says which kernel and why (cudaGetErrorName / String).
//
// kernels/ does not depend on the harness in src/: the CUDA device (src/device/cuda) reports a
// LaunchError as kv::DeviceError with the same message, as it reports every other CUDA failure.
// A descriptor that no path can run is std::invalid_argument instead, as on the host.
#pragma once

#include <stdexcept>

namespace kv::cuda {

struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kv::cuda
