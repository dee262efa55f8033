// device_info.h — where a run happened: the machine kvcheck ran on and, on the CUDA device, the
// GPU and the CUDA stack under it. Plain data, filled by Device::info() and written into every
// result document ("device_info"), so that a figure can be traced to the hardware and driver
// that produced it.
//
// The host fields are filled on every device: the reference and the checks run on the CPU
// whichever device runs the ops. What cannot be read is empty (nullopt), never a guess.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kv {

// The GPU of a CUDA run and the CUDA stack it ran under.
struct GpuInfo {
  int32_t ordinal = 0;               // the CUDA device index
  std::string name;                  // "NVIDIA H100 80GB HBM3"
  std::string compute_capability;    // "9.0"
  uint64_t total_memory_bytes = 0;
  int32_t sm_count = 0;
  std::string cuda_runtime_version;  // the runtime kvcheck runs (cudaRuntimeGetVersion): "13.0"
  std::string cuda_driver_version;   // the newest CUDA the driver supports (cudaDriverGetVersion)
  std::optional<std::string> nvidia_driver_version;  // "580.159.04"; nullopt when unreadable
};

struct DeviceInfo {
  std::string kind;                      // "host" or "cuda": Device::name()
  std::optional<std::string> cpu_model;  // /proc/cpuinfo's "model name"; nullopt when unreadable
  int32_t hardware_threads = 0;          // the threads the OS runs at once (>= 1)
  std::optional<GpuInfo> gpu;            // only on the CUDA device
};

// The host's fields (kind "host", no GPU), read now.
DeviceInfo host_device_info();

// The first "model name" value of a /proc/cpuinfo text; nullopt when there is none (some ARM
// kernels do not print one).
std::optional<std::string> parse_cpu_model(const std::string& cpuinfo);
// The driver version on the "NVRM version:" line of a /proc/driver/nvidia/version text (the
// first word made of digits and dots); nullopt when there is none.
std::optional<std::string> parse_nvidia_driver_version(const std::string& text);
// The NVIDIA kernel driver's version, from /proc/driver/nvidia/version (Linux; no NVML);
// nullopt when the file cannot be read or parsed.
std::optional<std::string> nvidia_driver_version();
// A CUDA version number as the runtime API returns it (13000) as "13.0".
std::string cuda_version_text(int version);

}  // namespace kv
