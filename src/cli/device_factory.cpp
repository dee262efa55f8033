// device_factory.cpp — the device behind `--device`, and whether CUDA can be used.
#include "cli/device_factory.h"

#include "device/host_device.h"

#ifdef KVCHECK_HAVE_CUDA
// Provided by the CUDA device (src/device/cuda/, library kv_cuda): whether the CUDA runtime sees a
// GPU (cudaGetDeviceCount > 0, without throwing when the driver is missing), and a device on it.
namespace kv {
bool cuda_gpu_present();
std::unique_ptr<Device> make_cuda_device();
}  // namespace kv
#endif

namespace kv::cli {

bool cuda_built() {
#ifdef KVCHECK_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_device_available() {
#ifdef KVCHECK_HAVE_CUDA
  return kv::cuda_gpu_present();
#else
  return false;
#endif
}

static std::unique_ptr<Device> make_cuda() {
  if (!cuda_built())
    throw DeviceUnavailable(
        "--device cuda: this kvcheck was built without CUDA (no nvcc at configure time); "
        "use --device host, or rebuild with nvcc on PATH and -DKVCHECK_CUDA=ON");
  if (!cuda_device_available())
    throw DeviceUnavailable(
        "--device cuda: no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
        "use --device host to run on the CPU");
#ifdef KVCHECK_HAVE_CUDA
  return kv::make_cuda_device();
#else
  return nullptr;  // unreachable: cuda_built() is false
#endif
}

const std::vector<std::string>& device_kinds() {
  static const std::vector<std::string> kinds = {"host", "cuda", "auto"};
  return kinds;
}

std::unique_ptr<Device> make_device(const std::string& kind) {
  if (kind == "host") return std::make_unique<HostDevice>();
  if (kind == "cuda") return make_cuda();
  if (kind == "auto") {
    if (cuda_device_available()) return make_cuda();
    return std::make_unique<HostDevice>();
  }
  throw std::invalid_argument("unknown device '" + kind + "' (expected host, cuda or auto)");
}

}  // namespace kv::cli
