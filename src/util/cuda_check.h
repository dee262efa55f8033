// cuda_check.h — turn a failed CUDA runtime call into a kv::DeviceError that says what kvcheck was
// doing (the op or device method), which call failed and why (cudaGetErrorName / String).
//
//   KV_CUDA_CHECK("upload", cudaMemcpyAsync(...));
//
// A failed call's error is also cleared from the runtime's "last error", so that a recoverable
// failure (out of memory, a bad launch configuration) is not reported a second time by the next
// launch check. Sticky errors (an illegal address in a kernel) cannot be cleared: every later call
// fails too, and the message says so.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "util/device_error.h"

namespace kv::cuda_detail {

inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

// Errors with which the driver fails to start (cuInit, context creation): out of host memory or
// address space (measured under `ulimit -v 8G` on an H200: cudaGetDeviceCount and every call after
// it return cudaErrorMemoryAllocation), or an initialisation failure. A missing driver or GPU is
// cudaErrorInsufficientDriver / cudaErrorNoDevice instead: no GPU, not a failed start.
inline bool is_start_failure(cudaError_t e) {
  return e == cudaErrorMemoryAllocation || e == cudaErrorInitializationError ||
         e == cudaErrorOperatingSystem;
}

// "<what>: <call> failed: cudaErrorX (message)" plus, for sticky errors, what that implies.
inline std::string describe(cudaError_t e, const std::string& what, const char* call) {
  std::string m = "cuda " + what + ": " + call + " failed: " + cudaGetErrorName(e) + " (" +
                  cudaGetErrorString(e) + ")";
  if (is_sticky(e))
    m += "; a kernel faulted, the CUDA context is now unusable and kvcheck must exit. The fault "
         "may come from any op launched since the last synchronize: rerun with "
         "CUDA_LAUNCH_BLOCKING=1 (or compute-sanitizer) to pin it to one op";
  return m;
}

[[noreturn]] inline void throw_cuda(cudaError_t e, const std::string& what, const char* call) {
  (void)cudaGetLastError();  // clear a recoverable error; a sticky one stays regardless
  throw DeviceError(describe(e, what, call));
}

inline void check(cudaError_t e, const std::string& what, const char* call) {
  if (e != cudaSuccess) throw_cuda(e, what, call);
}

// check() for the calls that start the device: a start failure is a DeviceStartError.
inline void check_start(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  if (!is_start_failure(e)) throw_cuda(e, "init", call);
  (void)cudaGetLastError();
  throw DeviceStartError(describe(e, "init", call));
}

}  // namespace kv::cuda_detail

#define KV_CUDA_CHECK(what, call) ::kv::cuda_detail::check((call), (what), #call)
#define KV_CUDA_START(call) ::kv::cuda_detail::check_start((call), #call)
