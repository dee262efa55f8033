// device_info_test.cpp — DeviceInfo: what the host device reports about this machine, and the
// /proc readers behind it and behind the CUDA device's driver version, on real file texts.
#include "device/device_info.h"

#include <gtest/gtest.h>

#include "device/host_device.h"

namespace kv {
namespace {

TEST(DeviceInfo, TheHostDeviceSaysItsKindAndThreadsAndHasNoGpu) {
  HostDevice d;
  const DeviceInfo info = d.info();
  EXPECT_EQ(info.kind, "host");
  EXPECT_EQ(info.kind, d.name());
  EXPECT_GT(info.hardware_threads, 0);
  EXPECT_FALSE(info.gpu.has_value());
  if (info.cpu_model) {
    EXPECT_FALSE(info.cpu_model->empty());
  }
}

TEST(DeviceInfo, CpuModelIsTheFirstModelNameTrimmed) {
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\n\n"
      "processor\t: 1\nmodel name\t: Another CPU\n";
  EXPECT_EQ(parse_cpu_model(x86), "Intel(R) Xeon(R) Platinum 8480+");
  // "model" alone is not "model name"; some ARM kernels print no model name at all.
  EXPECT_EQ(parse_cpu_model("processor\t: 0\nmodel\t\t: 143\nCPU part\t: 0xd40\n"), std::nullopt);
  EXPECT_EQ(parse_cpu_model("model name\t:   \n"), std::nullopt);
  EXPECT_EQ(parse_cpu_model(""), std::nullopt);
}

TEST(DeviceInfo, NvidiaDriverVersionFromTheNvrmLine) {
  // The proprietary and the open kernel module word the line differently.
  const std::string proprietary =
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 2025\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  EXPECT_EQ(parse_nvidia_driver_version(proprietary), "580.159.04");
  const std::string open =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 2025\nGCC version:  gcc version 13.3.0\n";
  EXPECT_EQ(parse_nvidia_driver_version(open), "570.86.15");
  EXPECT_EQ(parse_nvidia_driver_version("GCC version:  gcc version 12.2.0\n"), std::nullopt);
  EXPECT_EQ(parse_nvidia_driver_version(""), std::nullopt);
}

TEST(DeviceInfo, CudaVersionNumbersReadAsMajorDotMinor) {
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12080), "12.8");
  EXPECT_EQ(cuda_version_text(11040), "11.4");
}

}  // namespace
}  // namespace kv
