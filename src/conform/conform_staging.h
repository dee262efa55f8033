// conform_staging.h — where a conform case's buffers live while the plugin runs. A case builds
// its inputs and poisoned outputs in host vectors and runs kvcheck's host op on them; the plugin
// gets copies of the same bytes in the memory of its device (kvcheck's Device of that kind: host
// memory for a kDLCPU plugin, GPU memory for kDLCUDA), and the outputs come back into the host
// vectors after the call, so every comparison reads host memory whichever device ran.
//
// The copies are made on the host device too: one path, exercised by the host suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "device/device.h"
#include "kvcheck/backend.h"

namespace kv::conform {

class Staging final : public backend::PointerMap {
 public:
  Staging(Device& device, DLDevice dl) : device_(device), dl_(dl) {}
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Registers host bytes the plugin reads (input) or may write (output) and copies them to the
  // device now: register a buffer once its contents (inputs, poison) are final. Outputs come
  // back after each call(). A pointer inside a registered range maps to the same offset.
  void input(const void* p, size_t bytes) { add(const_cast<void*>(p), bytes, false); }
  void output(void* p, size_t bytes) { add(p, bytes, true); }
  template <class T>
  void input(const std::vector<T>& v) { input(v.data(), v.size() * sizeof(T)); }
  template <class T>
  void output(std::vector<T>& v) { output(v.data(), v.size() * sizeof(T)); }

  // The device copy of a registered host address; throws std::logic_error for any other (a
  // conform case that forgot to register a buffer: the plugin would read host memory).
  const void* to_device(const void* p) const override;

  // A builder whose tensors point at the device copies.
  backend::AbiBuilder builder() const { return backend::AbiBuilder(dl_, this); }

  // Calls one op of the plugin on the device's stream, then copies the outputs back. "" or why:
  // the status and message it returned. A DeviceError (a fault of the GPU) propagates.
  template <class Args>
  std::string call(const kvcheck_backend& b,
                   int32_t (*fn)(void*, const Args*, void*, char*, size_t), const Args& a) {
    char err[512] = "";
    int32_t status = KVCHECK_OK;
    device_.run_external("conform", [&](void* stream) {
      status = fn(b.self, &a, stream, err, sizeof(err));
    });
    download();
    if (status == KVCHECK_OK) return "";
    return "returned status " + std::to_string(status) + ": " + (*err ? err : "(no message)");
  }

 private:
  struct Range {
    void* host;
    size_t bytes;
    void* dev;
    bool output;
  };
  void add(void* p, size_t bytes, bool output);
  void download();

  Device& device_;
  DLDevice dl_;
  std::vector<Range> ranges_;
};

}  // namespace kv::conform
