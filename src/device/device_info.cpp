// device_info.cpp — the host's fields of a DeviceInfo and the /proc readers behind them (also
// the NVIDIA driver's version, which the CUDA device reports).
#include "device/device_info.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace kv {
namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The whole of a (small, /proc) text file; nullopt when it cannot be opened.
std::optional<std::string> read_text(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_version_word(const std::string& w) {
  bool digit = false, dot = false;
  for (char c : w) {
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c == '.')
      dot = true;
    else
      return false;
  }
  return digit && dot && w.front() != '.' && w.back() != '.';
}

int32_t hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();  // 0: unknown
  if (n > 0) return static_cast<int32_t>(n);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int32_t>(online) : 1;
}

}  // namespace

std::optional<std::string> parse_cpu_model(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || trimmed(line.substr(0, colon)) != "model name") continue;
    const std::string value = trimmed(line.substr(colon + 1));
    if (!value.empty()) return value;
  }
  return std::nullopt;
}

std::optional<std::string> parse_nvidia_driver_version(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream words(line.substr(13));
    std::string w;
    while (words >> w)
      if (is_version_word(w)) return w;
  }
  return std::nullopt;
}

std::optional<std::string> nvidia_driver_version() {
  const std::optional<std::string> text = read_text("/proc/driver/nvidia/version");
  return text ? parse_nvidia_driver_version(*text) : std::nullopt;
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

DeviceInfo host_device_info() {
  DeviceInfo info;
  info.kind = "host";
  const std::optional<std::string> cpuinfo = read_text("/proc/cpuinfo");
  if (cpuinfo) info.cpu_model = parse_cpu_model(*cpuinfo);
  info.hardware_threads = hardware_threads();
  return info;
}

}  // namespace kv
