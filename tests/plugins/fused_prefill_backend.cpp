// fused_prefill_backend.cpp — a host plugin with the fused paged_prefill, so that the tests can
// drive the engine's fused path (the engine calls paged_prefill instead of its gather ->
// varlen -> merge chain when a backend has it). Everything else is kvcheck's host plugin
// (host_backend.cpp compiled in with its entry point renamed); paged_prefill is the host op
// kernels/host/paged_prefill.cpp, composed of the host ops over the paged cache. Built as
// libkvtest_fused.so.
#include <cstdint>

#include "backends/builtin/builtin_table.h"
#include "kernels/host/host_ops.h"
#include "host_plugin.h"
#include "kvcheck/backend.h"

namespace {

using namespace kv;

const kvcheck_backend* g_host = nullptr;

kvcheck_backend make_table(const kvcheck_backend& host) {
  kvcheck_backend b = host;
  b.name = "test-fused-prefill";
  b.paged_prefill = builtin_plugin::convert_entry<builtin_plugin::HostRun,
                                                  KVCHECK_OP_PAGED_PREFILL, host::paged_prefill>;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  return wrap_host_plugin(abi_version, host, err, err_size, &g_host, make_table);
}
