// device_error.h — the failures of a device itself (out of memory, a CUDA error, a driver that
// cannot start): the run cannot be carried out. Here, below the devices, so that the float64
// reference on the GPU (src/reference/cuda) raises the same errors without depending on them.
#pragma once

#include <stdexcept>

namespace kv {

// A failure of the device itself (out of memory, a CUDA error): the run cannot be carried out.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The device could not allocate: a limit of the machine, never a backend's fault.
struct OutOfMemory : DeviceError {
  using DeviceError::DeviceError;
};

// The device's driver could not start (create its context) for lack of memory or address space,
// or failed to initialise: a limit of the machine or of the process (`ulimit -v`), never a
// backend's fault. The CLI says which limit (cli/device_factory.cpp).
struct DeviceStartError : DeviceError {
  using DeviceError::DeviceError;
};

}  // namespace kv
