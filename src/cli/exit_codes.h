// exit_codes.h — what kvcheck's exit status means; the help text and README say the same.
//
// The codes are chosen for `git bisect run`: 0 good, 1 bad, 125 "cannot test this commit".
#pragma once

namespace kv::cli {

enum ExitCode : int {
  kExitOk = 0,            // every verdict matches its expectation
  kExitMismatch = 1,      // corruption where clean was expected, or an expected one not found
  kExitBadInput = 2,      // invalid scenario, unknown regression, command-line usage error
  kExitCannotRun = 3,     // device error, no GPU, out of memory, result file not writable
  kExitBisectSkip = 125,  // kExitCannotRun under --bisect: git bisect skips the commit
};

inline constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0    every verdict matches its expectation\n"
    "  1    some verdict does not (corruption where clean was expected,\n"
    "       or an expected corruption not found)\n"
    "  2    bad input or usage (invalid scenario, unknown regression, bad option)\n"
    "  3    a run could not be carried out (device error, no GPU for --device cuda,\n"
    "       out of memory, result file not writable)\n"
    "  125  instead of 3 under --bisect, so `git bisect run` skips the commit\n";

// The status for "the run could not be carried out".
inline int cannot_run(bool bisect) { return bisect ? kExitBisectSkip : kExitCannotRun; }

}  // namespace kv::cli
