// fault_injection.cpp — KVCHECK_INJECT_FAULT (fault_injection.h).
#include "cli/fault_injection.h"

#include <signal.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace kv::cli {

void inject_fault_if_asked() {
  const char* value = std::getenv(kInjectFaultEnv);
  const std::string_view v = value ? value : "";
  if (v == "internal-error")
    throw std::logic_error("BlockPool: invariant broken on purpose (KVCHECK_INJECT_FAULT)");
  if (v == "crash") {
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
}

}  // namespace kv::cli
