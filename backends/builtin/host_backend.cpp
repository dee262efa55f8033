// host_backend.cpp — kvcheck's built-in host ops (kernels/host) as a backend plugin:
// libkvcheck_backend_host.so, name "builtin-host".
//
// Every op of the table but paged_prefill converts its ABI args back into kvcheck's descriptor
// (the table of builtin_table.h) and runs the kv::host op on it, so through the ABI it computes
// bit for bit what kvcheck's host device computes; tests/backend holds it to that. The decode
// plan is the built-in planner's (plan_decode_splits_for), written into the plan buffer (host
// memory on the host); paged_decode carves kvcheck's partial_out / partial_lse out of the
// workspace it declared. Runs on kDLCPU only. No exception leaves an op: each becomes
// KVCHECK_ERROR with its message.
#include <cstring>
#include <string>
#include <vector>

#include "backends/builtin/builtin_table.h"
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"
#include "report/version.h"

namespace {

using namespace kv;

struct HostOps : builtin_plugin::HostRun {
  static constexpr const char* kName = "builtin-host";
  static constexpr DLDeviceType kRunsOn = kDLCPU;
  static constexpr const char* kElsewhere = "on a GPU, libkvcheck_backend_cuda.so";
  static std::string version() { return std::string("kvcheck ") + kKvcheckVersion; }
  static void* self() { return nullptr; }

  KV_BUILTIN_OP_FUNCTIONS(host)

  static std::string paged_decode(const PagedDecodeArgs& d, float* lse, void*) {
    host::paged_decode(d);
    if (lse) builtin_plugin::host_decode_lse(d, lse);
    return "";
  }

  static std::string store_plan(const std::vector<int32_t>& plan, const DecodePlanArgs& d,
                                void*) {
    memcpy(d.plan, plan.data(), plan.size() * sizeof(int32_t));  // host memory on the host
    return "";
  }
};

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  return kv::builtin_plugin::init<HostOps>(abi_version, host, err, err_size);
}
