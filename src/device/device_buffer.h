// device_buffer.h — an owning handle to one device allocation (released on destruction), with
// typed views. Plain RAII; the engine keeps every persistent buffer in one of these.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "device/device.h"

namespace kv {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& dev, size_t bytes) : dev_(&dev), bytes_(bytes) {
    ptr_ = bytes ? dev.alloc(bytes) : nullptr;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) dev_->release(ptr_);
  }

  template <class T = void>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

  template <class T>
  void upload(const std::vector<T>& v) const {
    if (v.empty()) return;
    if (v.size() * sizeof(T) > bytes_) throw DeviceError("upload larger than its buffer");
    dev_->upload(ptr_, v.data(), v.size() * sizeof(T));
  }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(dev_, o.dev_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  Device* dev_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace kv
