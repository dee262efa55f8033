// exit_codes.cpp — the exit-code table and its two renderings.
#include "cli/exit_codes.h"

#include <array>
#include <sstream>

namespace kv::cli {
namespace {

constexpr std::array<ExitCodeRow, 9> kTable = {{
    {kExitOk, "every verdict matches its scenario's expectation", ""},
    {kExitMismatch,
     "a verdict does not: corruption where clean was expected, or an expected corruption not "
     "found; or a verdict is error: the code under test (a backend op) crashed, exited the "
     "process, returned an error status or hung, whatever the scenario expects",
     ""},
    {kExitBadInput,
     "bad input or usage: an invalid scenario, an unknown field, regression or option, a file "
     "that is not a regular file or is too large; nothing is run and no result file is written",
     "125, skip: this commit cannot understand the input (an older commit that lacks a field "
     "or a regression)"},
    {kExitCannotRun,
     "the run cannot be carried out: device error, no GPU for --device cuda, out of memory or "
     "an estimate above this machine's memory or --max-memory, a backend that does not load "
     "(its constructors or init fail, crash, exit or hang) or cannot take the scenario, output (result folder or stdout) not writable, --max-seconds "
     "reached",
     "125, skip"},
    {kExitInternalError,
     "an internal error of kvcheck itself (an assertion or invariant of the engine, block pool "
     "or scheduler broke): a kvcheck bug, please report it",
     "1, bad: the commit under test broke kvcheck's own invariants"},
    {kExitBisectSkip, "only under --bisect, instead of 2 or 3: git bisect skips the commit", ""},
    {kExitSighup,
     "interrupted by SIGHUP (the terminal or session went away): handled as SIGINT is",
     "the same (scripts/bisect-step.sh aborts the bisection)"},
    {kExitSigint,
     "interrupted by SIGINT: no result file is left half-written, temporary files are removed",
     "the same (scripts/bisect-step.sh aborts the bisection)"},
    {kExitSigterm, "interrupted by SIGTERM (the same)",
     "the same (scripts/bisect-step.sh aborts the bisection)"},
}};

// Wraps `text` at `width` columns, every line after the first indented by `indent` spaces.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

}  // namespace

std::span<const ExitCodeRow> exit_code_table() { return kTable; }

namespace {
// Higher is more severe (worse_status).
int severity(int code) {
  switch (code) {
    case kExitOk: return 0;
    case kExitCannotRun:
    case kExitBadInput:
    case kExitBisectSkip: return 1;
    case kExitMismatch: return 2;
    case kExitInternalError: return 3;
    default: return 4;  // interrupted (129, 130, 143) or anything outside the table
  }
}
}  // namespace

int worse_status(int a, int b) { return severity(b) > severity(a) ? b : a; }

const char* exit_order_text() {
  return "When a run of several scenarios ends in more than one way, one order decides its "
         "status: interrupted (129, 130, 143) > internal error (4) > mismatch or verdict error "
         "(1) > cannot run (3) > ok (0); bad input (2) is decided before anything runs. A "
         "scenario found bad is never hidden by a later one that could not run.";
}

std::string exit_codes_help() {
  constexpr std::size_t kIndent = 7;  // "  125  "
  std::string out = "Exit codes:\n";
  for (const ExitCodeRow& r : kTable) {
    std::string code = std::to_string(r.code);
    code.resize(kIndent - 2, ' ');
    std::string text = r.meaning;
    if (*r.under_bisect) text += ". With --bisect: " + std::string(r.under_bisect);
    out += "  " + code + wrap(text, 92 - kIndent, kIndent) + "\n";
  }
  return out;
}

std::string exit_codes_markdown() {
  std::string out = "| code | meaning | under `--bisect` |\n|---|---|---|\n";
  for (const ExitCodeRow& r : kTable)
    out += "| " + std::to_string(r.code) + " | " + r.meaning + " | " +
           (*r.under_bisect ? r.under_bisect : "the same") + " |\n";
  return out + "\n" + exit_order_text() + "\n";
}

int bisect_status(int code) {
  switch (code) {
    case kExitBadInput:
    case kExitCannotRun: return kExitBisectSkip;
    case kExitInternalError: return kExitMismatch;
    default: return code;
  }
}

std::string internal_error_message(const std::string& what) {
  return "internal error: " + what +
         "\n  this is a kvcheck bug, please report it with the command and the scenario files "
         "(exit 4)";
}

}  // namespace kv::cli
