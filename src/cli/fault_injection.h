// fault_injection.h — KVCHECK_INJECT_FAULT, a test-only environment variable that makes kvcheck
// fail in one of the ways its exit codes distinguish, at the point a scenario starts running (in
// this process, or in the worker with a backend). The tests of the exit-code table use it for
// what no valid input can cause: a broken invariant of kvcheck's own.
//
//   internal-error   throws std::logic_error, as a block pool or scheduler invariant would (4)
//   crash            kvcheck itself dies by SIGSEGV (a death by signal: a bisect step's "bad")
//
// Unset or empty: nothing. Any other value is ignored.
//
// The hook is built in only with -DKVCHECK_TEST_HOOKS=ON (the test build and CI: scripts/test.sh,
// scripts/sanitize.sh); a release build ignores the variable and says so once at start.
#pragma once

namespace kv::cli {

inline constexpr const char* kInjectFaultEnv = "KVCHECK_INJECT_FAULT";

#if KVCHECK_TEST_HOOKS
inline constexpr bool kFaultHookBuiltIn = true;
// Does what the variable asks, if anything.
void inject_fault_if_asked();
#else
inline constexpr bool kFaultHookBuiltIn = false;
inline void inject_fault_if_asked() {}
#endif

// A warning on stderr when the variable is set (not empty) in a kvcheck built without the hook,
// so that nobody takes its silence for the fault's absence. Called once, at start.
void warn_if_fault_request_ignored();

}  // namespace kv::cli
