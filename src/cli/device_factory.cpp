// device_factory.cpp — the device behind `--device`, and whether CUDA can be used.
#include "cli/device_factory.h"

#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/host_memory.h"
#include "device/host_device.h"
#include "report/format.h"
#include "scenario/suggest.h"

#ifdef KVCHECK_HAVE_CUDA
// Provided by the CUDA device (src/device/cuda/, library kv_cuda): whether the CUDA runtime sees a
// GPU (cudaGetDeviceCount > 0, without throwing when the driver is missing), why the driver could
// not start, and a device on it.
namespace kv {
bool cuda_gpu_present();
int cuda_gpu_count();
std::string cuda_kernel_image_missing();
std::string cuda_start_failure();  // why the driver could not start; empty: it could, or no GPU
std::unique_ptr<Device> make_cuda_device(int ordinal);
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

int cuda_device_count() {
#ifdef KVCHECK_HAVE_CUDA
  return cuda_device_available() ? kv::cuda_gpu_count() : 0;
#else
  return 0;
#endif
}

#ifdef KVCHECK_HAVE_CUDA
// The driver failed to start (`why`: the CUDA call and its error): which limit to raise. The driver
// maps about 13 GiB of address space for itself when it starts (measured on an H200, driver 580:
// VmSize 12.3 GiB after cudaGetDeviceCount, 13.0 GiB after cudaSetDevice; under `ulimit -v 8G`
// cudaGetDeviceCount fails with cudaErrorMemoryAllocation), so a `ulimit -v` of a few GB stops it
// before kvcheck allocates anything.
static std::string driver_cannot_start(const std::string& why) {
  if (const auto as = address_space_cap())
    return fmt::format("the CUDA driver cannot start under `ulimit -v` {} (RLIMIT_AS; {} left): "
                       "it maps about 13 GiB of address space for itself when it starts ({}); "
                       "raise the limit (`ulimit -v unlimited`)",
                       format_bytes(as->limit), format_bytes(as->left()), why);
  return fmt::format("the CUDA driver could not start ({}); check this process's memory limits "
                     "(`ulimit -d`, its cgroup) and nvidia-smi",
                     why);
}
#endif

static std::unique_ptr<Device> make_cuda(int ordinal = -1) {
  if (!cuda_built())
    throw DeviceUnavailable(
        "--device cuda: this kvcheck was built without CUDA (no nvcc at configure time); "
        "use --device host, or rebuild with nvcc on PATH and -DKVCHECK_CUDA=ON");
#ifdef KVCHECK_HAVE_CUDA
  if (!cuda_device_available()) {
    // Under a small `ulimit -v` the driver cannot even count the GPUs: not "no GPU".
    if (const std::string why = kv::cuda_start_failure(); !why.empty())
      throw DeviceUnavailable("--device cuda: " + driver_cannot_start(why) +
                              ", or use --device host");
  }
#endif
  if (!cuda_device_available())
    throw DeviceUnavailable(
        "--device cuda: no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
        "use --device host to run on the CPU");
#ifdef KVCHECK_HAVE_CUDA
  try {
    if (ordinal >= 0 && ordinal >= kv::cuda_gpu_count())
      throw DeviceUnavailable(fmt::format(
          "--device cuda:{}: this machine's CUDA runtime sees {} GPU(s), numbered from 0 (check "
          "nvidia-smi and CUDA_VISIBLE_DEVICES)",
          ordinal, kv::cuda_gpu_count()));
    std::unique_ptr<Device> device = kv::make_cuda_device(ordinal);
    if (const std::string why = kv::cuda_kernel_image_missing(); !why.empty())
      throw DeviceUnavailable("--device cuda: " + why);
    return device;
  } catch (const DeviceStartError& e) {
    throw DeviceUnavailable("--device cuda: " + driver_cannot_start(e.what()) +
                            ", or use --device host");
  }
#else
  return nullptr;  // unreachable: cuda_built() is false
#endif
}

std::variant<std::pair<DeviceKind, int>, std::string> parse_device(const std::string& text) {
  if (auto k = enum_from_name(kDeviceKindNames, text)) return std::pair{*k, -1};
  if (text.starts_with("cuda:")) {
    const std::string n = text.substr(5);
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), ordinal);
    if (ec == std::errc() && end == n.data() + n.size() && !n.empty() && ordinal >= 0 &&
        ordinal < 1024)
      return std::pair{DeviceKind::cuda, ordinal};
  }
  return fmt::format("got \"{}\", expected host, cuda, cuda:N (GPU N, from 0) or auto{}", text,
                     suggestion_tail(text, enum_names(kDeviceKindNames)));
}

const char* to_string(DeviceKind kind) { return name_in(kDeviceKindNames, kind).data(); }

std::unique_ptr<Device> make_device(DeviceKind kind, int ordinal) {
  switch (kind) {
    case DeviceKind::host: return std::make_unique<HostDevice>();
    case DeviceKind::cuda: return make_cuda(ordinal);
    case DeviceKind::automatic: break;
  }
  // Said out loud either way: a nightly GPU gate that quietly ran on the CPU would pass on the
  // wrong device (--require-gpu makes that exit 3 instead).
  if (cuda_device_available()) {
    try {
      std::unique_ptr<Device> cuda = make_cuda(ordinal);
      spdlog::info("--device auto: running on {} (a CUDA GPU is visible)", cuda->name());
      return cuda;
    } catch (const DeviceUnavailable& e) {  // a GPU this build has no kernels for
      spdlog::warn("--device auto: running on the host: {}; --require-gpu makes this exit 3",
                   e.what());
      return std::make_unique<HostDevice>();
    }
  }
#ifdef KVCHECK_HAVE_CUDA
  if (const std::string why = kv::cuda_start_failure(); !why.empty()) {
    spdlog::warn("--device auto: {}; running on the host", driver_cannot_start(why));
    return std::make_unique<HostDevice>();
  }
#endif
  spdlog::warn("--device auto: running on the host ({}); --require-gpu makes this exit 3",
               cuda_built() ? "no CUDA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES"
                            : "this kvcheck was built without CUDA");
  return std::make_unique<HostDevice>();
}

}  // namespace kv::cli
