// fault_backend.cu — a CUDA plugin whose write_kv launches a kernel that writes through a wild
// pointer: the launch succeeds and the fault surfaces at kvcheck's next synchronisation, in
// kvcheck's own code. Once a backend has launched work, such a device error is the backend's
// (verdict error, exit 1, "last backend op launched: write_kv"), never a "could not run" that
// git bisect would skip (ctest gpu-backend-device-fault). Built only with the CUDA device.
#include <cuda_runtime.h>

#include <cstring>

#include "kvcheck/backend.h"

namespace {

__global__ void wild_write(int* p) { *p = 1; }

int32_t write_kv(void*, const kvcheck_write_kv_args*, void* stream, char*, size_t) {
  wild_write<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<int*>(0x10));
  return cudaGetLastError() == cudaSuccess ? KVCHECK_OK : KVCHECK_ERROR;
}

kvcheck_backend make_table() {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  b.name = "test-device-fault";
  b.version = "0";
  b.caps.struct_size = sizeof(b.caps);
  b.caps.io_dtype = KVCHECK_F32;
  b.caps.lse_base = KVCHECK_LSE_NATURAL;
  b.caps.empty_row_lse = -INFINITY;
  b.caps.graph_support = KVCHECK_GRAPHS_FULL;
  b.write_kv = write_kv;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION || host == nullptr ||
      host->device.device_type != kDLCUDA) {
    strncpy(err, "test-device-fault: CUDA, ABI v1 only", err_size - 1);
    return nullptr;
  }
  static const kvcheck_backend table = make_table();
  return &table;
}
