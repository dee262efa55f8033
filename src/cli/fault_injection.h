// fault_injection.h — KVCHECK_INJECT_FAULT, a test-only environment variable that makes kvcheck
// fail in one of the ways its exit codes distinguish, at the point a scenario starts running (in
// this process, or in the worker with a backend). The tests of the exit-code table use it for
// what no valid input can cause: a broken invariant of kvcheck's own.
//
//   internal-error   throws std::logic_error, as a block pool or scheduler invariant would (4)
//   crash            kvcheck itself dies by SIGSEGV (a death by signal: a bisect step's "bad")
//
// Unset or empty: nothing. Any other value is ignored.
#pragma once

namespace kv::cli {

inline constexpr const char* kInjectFaultEnv = "KVCHECK_INJECT_FAULT";

// Does what the variable asks, if anything.
void inject_fault_if_asked();

}  // namespace kv::cli
