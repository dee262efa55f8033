// device_factory.h — turn `--device host|cuda|auto` into a Device.
#pragma once

#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "device/device.h"
#include "scenario/enum_names.h"

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

// How many GPUs the CUDA runtime sees (0 in a host-only build or without a GPU). Starts the
// driver: a parent of workers asks in a worker (plugin/worker.h).
int cuda_device_count();

// Where `--device` runs the ops. automatic ("auto"): cuda when available, else host.
enum class DeviceKind { host, cuda, automatic };

// As `--device` spells them (cli/name_option.h reads them).
inline constexpr std::array<EnumName<DeviceKind>, 3> kDeviceKindNames{{
    {DeviceKind::host, "host"},
    {DeviceKind::cuda, "cuda"},
    {DeviceKind::automatic, "auto"},
}};

const char* to_string(DeviceKind kind);

// host -> HostDevice; cuda -> the CUDA device (GPU `ordinal`, -1: the current one), or
// DeviceUnavailable; automatic -> cuda (GPU `ordinal`) when available, else host.
std::unique_ptr<Device> make_device(DeviceKind kind, int ordinal = -1);

// `--device` text: host, cuda, auto, or cuda:N (GPU N). The kind and the ordinal (-1 but for
// cuda:N), or why not.
std::variant<std::pair<DeviceKind, int>, std::string> parse_device(const std::string& text);

}  // namespace kv::cli
