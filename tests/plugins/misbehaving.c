/* misbehaving.c — backend plugins that break the ABI's rules or cannot judge a scenario, one per
 * KIND (a compile definition), for the CLI tests of `kvcheck run --backend`:
 *   KIND_NO_ENTRY    exports no kvcheck_backend_init
 *   KIND_REFUSES     init returns NULL with a message
 *   KIND_FUTURE_ABI  init returns a table of ABI version 2
 *   KIND_FAILING_OP  write_kv returns an error status with a message
 *   KIND_FP8_ONLY    paged_decode declared for fp8 caches only
 * Plain C11: what a backend author writes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvcheck/backend.h"

#if defined(KIND_REFUSES)

KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(uint32_t abi_version,
                                                                   const kvcheck_host* host,
                                                                   char* err, size_t err_size) {
  (void)abi_version, (void)host;
  snprintf(err, err_size, "needs a GPU with 200 GB");
  return NULL;
}

#elif !defined(KIND_NO_ENTRY)

static int32_t failing_write_kv(void* self, const kvcheck_write_kv_args* a, void* stream,
                                char* err, size_t err_size) {
  (void)self, (void)a, (void)stream;
  snprintf(err, err_size, "out of slots");
  return KVCHECK_ERROR;
}

static int32_t unreachable_decode(void* self, const kvcheck_paged_decode_args* a, void* stream,
                                  char* err, size_t err_size) {
  (void)self, (void)a, (void)stream;
  snprintf(err, err_size, "called although its caps exclude the scenario");
  return KVCHECK_ERROR;
}

static kvcheck_backend table;

KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(uint32_t abi_version,
                                                                   const kvcheck_host* host,
                                                                   char* err, size_t err_size) {
  (void)abi_version, (void)host, (void)err, (void)err_size;
  memset(&table, 0, sizeof(table));
  table.struct_size = sizeof(table);
  table.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  table.name = "misbehaving";
  table.version = "0";
  table.caps.struct_size = sizeof(table.caps);
  table.caps.io_dtype = KVCHECK_F32;
  table.caps.empty_row_lse = -INFINITY;
  table.caps.graph_support = KVCHECK_GRAPHS_FULL;
#ifdef KIND_FUTURE_ABI
  table.abi_version = 2;
#endif
#ifdef KIND_FAILING_OP
  table.write_kv = failing_write_kv;
  (void)unreachable_decode;
#else
  table.paged_decode = unreachable_decode;
  table.caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_FP8_E4M3);
  (void)failing_write_kv;
#endif
  return &table;
}

#else
/* A library, but not a backend. */
KVCHECK_BACKEND_EXPORT int kvcheck_something_else(void) { return 0; }
#endif
