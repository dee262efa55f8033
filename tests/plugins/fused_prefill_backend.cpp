// fused_prefill_backend.cpp — a host plugin with the fused paged_prefill, so that the tests can
// drive the engine's fused path (the engine calls paged_prefill instead of its gather ->
// varlen -> merge chain when a backend has it). Everything else is kvcheck's host plugin
// (host_backend.cpp compiled in with its entry point renamed); paged_prefill is the host op
// kernels/host/paged_prefill.cpp, composed of the host ops over the paged cache. Built as
// libkvtest_fused.so.
#include <cstdint>

#include "backend/abi_convert.h"
#include "backends/builtin/builtin_plugin.h"
#include "kernels/host/host_ops.h"
#include "kvcheck/backend.h"

extern "C" const kvcheck_backend* kvcheck_host_backend_init(uint32_t, const kvcheck_host*, char*,
                                                            size_t);

namespace {

using namespace kv;

int32_t paged_prefill(void*, const kvcheck_paged_prefill_args* a, void*, char* err, size_t n) {
  return builtin_plugin::convert_and_run<PagedPrefillArgs>("paged_prefill", a, err, n,
                                                           host::paged_prefill);
}

const kvcheck_backend* g_host = nullptr;

kvcheck_backend make_table() {
  kvcheck_backend b = *g_host;
  b.name = "test-fused-prefill";
  b.paged_prefill = paged_prefill;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  g_host = kvcheck_host_backend_init(abi_version, host, err, err_size);
  if (g_host == nullptr) return nullptr;
  static const kvcheck_backend table = make_table();
  return &table;
}
