// fault_injection.cpp — KVCHECK_INJECT_FAULT (fault_injection.h).
#include "cli/fault_injection.h"

#include <signal.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <spdlog/spdlog.h>

namespace kv::cli {

static std::string_view fault_request() {
  const char* value = std::getenv(kInjectFaultEnv);
  return value ? value : "";
}

#if KVCHECK_TEST_HOOKS
void inject_fault_if_asked() {
  const std::string_view v = fault_request();
  if (v == "internal-error")
    throw std::logic_error("BlockPool: invariant broken on purpose (KVCHECK_INJECT_FAULT)");
  if (v == "crash") {
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
}
#endif

void warn_if_fault_request_ignored() {
  if (!kFaultHookBuiltIn && !fault_request().empty())
    spdlog::warn("{} is set but this kvcheck was built without -DKVCHECK_TEST_HOOKS=ON: ignored",
                 kInjectFaultEnv);
}

}  // namespace kv::cli
