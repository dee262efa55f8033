// host_plugin.h — what the test plugins that wrap kvcheck's host plugin share
// (conventions_backend.cpp, fused_prefill_backend.cpp, fatal_backend.cpp): its entry point, for
// backends/builtin/host_backend.cpp is compiled into each with kvcheck_backend_init renamed
// (CMakeLists.txt here), and an init that builds the wrapping table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvcheck/backend.h"

extern "C" const kvcheck_backend* kvcheck_host_backend_init(uint32_t abi_version,
                                                            const kvcheck_host* host, char* err,
                                                            size_t err_size);

// kvcheck_backend_init's body for such a plugin: the host plugin's table (kept in *host_table,
// for the wrapping ops to call), and the table make(host table) builds from it, once.
template <class Make>
const kvcheck_backend* wrap_host_plugin(uint32_t abi_version, const kvcheck_host* host, char* err,
                                        size_t err_size, const kvcheck_backend** host_table,
                                        Make make) {
  *host_table = kvcheck_host_backend_init(abi_version, host, err, err_size);
  if (*host_table == nullptr) return nullptr;
  static const kvcheck_backend table = make(**host_table);
  return &table;
}
