/* misbehaving.c — backend plugins that break the ABI's rules or cannot judge a scenario, one per
 * KIND (a compile definition), for the CLI tests of `kvcheck run --backend`:
 *   KIND_NO_ENTRY    exports no kvcheck_backend_init
 *   KIND_REFUSES     init returns NULL with a message
 *   KIND_FUTURE_ABI  init returns a table of ABI version 2
 *   KIND_FAILING_OP  write_kv returns an error status with a message
 *   KIND_FP8_ONLY    paged_decode declared for fp8 caches only
 * and, for the worker process that isolates a run (tests/cli/backend_isolation_test.cpp), ones
 * whose write_kv takes the process down:
 *   KIND_CRASH       dereferences NULL (SIGSEGV)
 *   KIND_EXIT0       calls exit(0), as library code does
 *   KIND_ABORT       calls abort() (SIGABRT)
 *   KIND_HANG        never returns
 * and one whose library constructor calls exit(0) when it is loaded (dlopen), before kvcheck
 * reaches its init: KIND_CTOR_EXIT0 (otherwise the table of KIND_CRASH's siblings, unused).
 * Plain C11: what a backend author writes. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvcheck/backend.h"

#if defined(KIND_CTOR_EXIT0)
__attribute__((constructor)) static void exit_when_loaded(void) { exit(0); }
#endif

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

/* write_kv of the kinds that take the process down; the others' never runs. */
static int32_t fatal_write_kv(void* self, const kvcheck_write_kv_args* a, void* stream, char* err,
                              size_t err_size) {
  (void)self, (void)a, (void)stream, (void)err, (void)err_size;
#if defined(KIND_CRASH)
  volatile int* volatile nowhere = NULL;
  return *nowhere;
#elif defined(KIND_EXIT0)
  exit(0);
#elif defined(KIND_ABORT)
  abort();
#elif defined(KIND_HANG)
  for (;;) pause();
#endif
  return KVCHECK_ERROR; /* not reached in the fatal kinds */
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
#if defined(KIND_FAILING_OP)
  table.write_kv = failing_write_kv;
  (void)unreachable_decode, (void)fatal_write_kv;
#elif defined(KIND_CRASH) || defined(KIND_EXIT0) || defined(KIND_ABORT) || defined(KIND_HANG)
  table.write_kv = fatal_write_kv;
  (void)unreachable_decode, (void)failing_write_kv;
#else
  table.paged_decode = unreachable_decode;
  table.caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_FP8_E4M3);
  (void)failing_write_kv, (void)fatal_write_kv;
#endif
  return &table;
}

#else
/* A library, but not a backend. */
KVCHECK_BACKEND_EXPORT int kvcheck_something_else(void) { return 0; }
#endif
