// fatal_backend.cpp — kvcheck's host ops as a plugin (backends/builtin/host_backend.cpp, compiled
// in with its entry point renamed), except where its --backend-option text says to take the
// process down, so that the tests of every entry point (`run`, `conform`, `list --backend`) can
// put a fault in one place and see the rest judged normally. The option is a comma list of
// WHERE=HOW:
//   WHERE  init, destroy, or an op's name (write_kv, paged_decode, gather_kv, ...)
//   HOW    crash (SIGSEGV), abort (SIGABRT), exit0 (exit(0)), exit3 (exit(3)), hang (never
//          returns), error (an error status with a message; ops only)
// e.g. "gather_kv=crash" or "init=hang". An empty option is the host plugin unchanged.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backend/abi_tensor.h"
#include "host_plugin.h"
#include "kvcheck/backend.h"
#include "ops/op_table.h"

namespace {

enum class How { none, crash, abort_, exit0, exit3, hang, error };

How g_op[KVCHECK_NUM_OPS] = {};
How g_init = How::none, g_destroy = How::none;
kvcheck_backend g_table;
const kvcheck_backend* g_host = nullptr;

How how_of(const std::string& s) {
  if (s == "crash") return How::crash;
  if (s == "abort") return How::abort_;
  if (s == "exit0") return How::exit0;
  if (s == "exit3") return How::exit3;
  if (s == "hang") return How::hang;
  if (s == "error") return How::error;
  return How::none;
}

// Takes the process down as `how` says; returns only for How::none and How::error.
void act(How how) {
  switch (how) {
    case How::crash: {
      volatile int* volatile nowhere = nullptr;
      *nowhere = 1;
      break;
    }
    case How::abort_: std::abort();
    case How::exit0: std::exit(0);
    case How::exit3: std::exit(3);
    case How::hang:
      for (;;) pause();
    default: break;
  }
}

// Every op goes through here: the fault, else the host op.
template <kvcheck_op Op, class Args, class Fn>
int32_t wrapped(Fn host_fn, void* self, const Args* a, void* stream, char* err, size_t n) {
  act(g_op[Op]);
  if (g_op[Op] == How::error) {
    std::snprintf(err, n, "%s refuses (fatal_backend)", kv::backend::op_name(Op));
    return KVCHECK_ERROR;
  }
  return host_fn(self, a, stream, err, n);
}

#define KV_WRAP(field, OP, ARGS)                                                         \
  if (g_host->field)                                                                     \
    g_table.field = [](void* self, const ARGS* a, void* stream, char* err, size_t n) {   \
      return wrapped<OP>(g_host->field, self, a, stream, err, n);                        \
    };

void destroy(void* self) {
  act(g_destroy);
  if (g_host->destroy) g_host->destroy(self);
}

bool parse(const char* text, char* err, size_t n) {
  std::string s = text ? text : "";
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string item = s.substr(0, comma);
    s = comma == std::string::npos ? "" : s.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string where = item.substr(0, eq);
    const How how = eq == std::string::npos ? How::none : how_of(item.substr(eq + 1));
    if (how == How::none) {
      std::snprintf(err, n, "fatal_backend: bad option item '%s' (expected WHERE=HOW)",
                    item.c_str());
      return false;
    }
    if (where == "init") {
      g_init = how;
      continue;
    }
    if (where == "destroy") {
      g_destroy = how;
      continue;
    }
    const std::optional<kvcheck_op> op = kv::abi_op_from_name(where);
    if (!op) {
      std::snprintf(err, n, "fatal_backend: unknown place '%s'", where.c_str());
      return false;
    }
    g_op[*op] = how;
  }
  return true;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  if (!parse(host ? host->options : nullptr, err, err_size)) return nullptr;
  act(g_init);
  // The options are this wrapper's; the host plugin takes none.
  kvcheck_host plain = host ? *host : kvcheck_host{};
  plain.options = "";
  g_host = kvcheck_host_backend_init(abi_version, host ? &plain : nullptr, err, err_size);
  if (!g_host) return nullptr;
  g_table = *g_host;
  g_table.name = "fatal";
  KV_WRAP(write_kv, KVCHECK_OP_WRITE_KV, kvcheck_write_kv_args)
  KV_WRAP(paged_decode, KVCHECK_OP_PAGED_DECODE, kvcheck_paged_decode_args)
  KV_WRAP(gather_kv, KVCHECK_OP_GATHER_KV, kvcheck_gather_kv_args)
  KV_WRAP(varlen_attention, KVCHECK_OP_VARLEN_ATTENTION, kvcheck_varlen_attention_args)
  KV_WRAP(merge_states, KVCHECK_OP_MERGE_STATES, kvcheck_merge_states_args)
  KV_WRAP(linear_attention, KVCHECK_OP_LINEAR_ATTENTION, kvcheck_linear_attention_args)
  KV_WRAP(fill_blocks, KVCHECK_OP_FILL_BLOCKS, kvcheck_fill_blocks_args)
  KV_WRAP(quant_fp8, KVCHECK_OP_QUANT_FP8, kvcheck_quant_fp8_args)
  KV_WRAP(paged_prefill, KVCHECK_OP_PAGED_PREFILL, kvcheck_paged_prefill_args)
  g_table.destroy = destroy;
  return &g_table;
}
