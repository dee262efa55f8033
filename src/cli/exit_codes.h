// exit_codes.h — what kvcheck's exit status means: the one table, rendered into `--help`
// (exit_codes_help) and docs/reliability.md's "Exit codes" section (exit_codes_markdown; a test
// keeps it in step).
//
// The codes are chosen for `git bisect run`: 0 good, 1 bad, 125 "cannot test this commit".
// Under --bisect, bisect_status() maps the rest onto those three.
#pragma once

#include <span>
#include <string>

namespace kv::cli {

enum ExitCode : int {
  kExitOk = 0,             // every verdict matches its expectation
  kExitMismatch = 1,       // a verdict does not, or a verdict is error (the code under test failed)
  kExitBadInput = 2,       // invalid scenario, unknown regression, command-line usage error
  kExitCannotRun = 3,      // device, memory, no GPU, backend does not load, output not writable
  kExitInternalError = 4,  // kvcheck's own invariant broke: a kvcheck bug
  kExitBisectSkip = 125,   // under --bisect: git bisect skips the commit
  kExitSighup = 129,       // interrupted by SIGHUP (128 + 1): the terminal went away
  kExitSigint = 130,       // interrupted by SIGINT (128 + 2)
  kExitSigterm = 143,      // interrupted by SIGTERM (128 + 15)
};

struct ExitCodeRow {
  int code;
  const char* meaning;       // one sentence, plain text
  const char* under_bisect;  // what `run --bisect` exits instead, and why ("" = the same)
};

// Every status kvcheck exits with, in order.
std::span<const ExitCodeRow> exit_code_table();

// The `--help` footer: "Exit codes:" and one aligned, wrapped entry per row.
std::string exit_codes_help();

// docs/reliability.md's table (Markdown, ending in a newline).
std::string exit_codes_markdown();

// One run's status from two of its parts (scenarios, or a run and its stdout): the more severe,
// in the stated order interrupted (129/130/143) > internal error (4) > mismatch or verdict error
// (1) > cannot run (3) > ok (0). Bad input (2) is decided before anything runs, so it meets
// nothing else; when it does, it ranks with cannot-run. 125 (a mapped status) ranks as 3.
int worse_status(int a, int b);

// The docs' sentence stating that order (exit_codes_markdown appends it).
const char* exit_order_text();

// The status `run --bisect` exits with for `code`: 2 and 3 become 125 (this commit cannot test
// this input or cannot run here: skip it), 4 becomes 1 (the commit under test broke kvcheck's
// own invariants: bad); the rest are unchanged.
int bisect_status(int code);

// What kvcheck says on stderr when its own invariant broke (exit 4): the error and a request to
// report it as a bug.
std::string internal_error_message(const std::string& what);

}  // namespace kv::cli
