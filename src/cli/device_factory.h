// device_factory.h — turn `--device host|cuda|auto` into a Device.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/device.h"

namespace kv::cli {

// The requested device cannot be had (not built, no GPU). The message says why and what to do.
struct DeviceUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether this binary was compiled with the CUDA device (KVCHECK_HAVE_CUDA).
bool cuda_built();

// Whether a CUDA device can be used now: built with CUDA and a GPU is visible. Always false in a
// host-only build.
bool cuda_device_available();

// The kinds make_device() takes, as `--device` accepts them: host, cuda, auto.
const std::vector<std::string>& device_kinds();

// "host" -> HostDevice; "cuda" -> the CUDA device, or DeviceUnavailable; "auto" -> cuda when
// available, else host. Any other kind throws std::invalid_argument (the CLI checks it first).
std::unique_ptr<Device> make_device(const std::string& kind);

}  // namespace kv::cli
