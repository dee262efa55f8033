// app.cpp — builds the CLI11 app from the subcommands (cmd_*.cpp), maps parse errors and stray
// exceptions onto kvcheck's exit codes (exit_codes.h), checks that stdout took what was written
// (as far as the command that ran needs it to), and dispatches.
#include "cli/app.h"

#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <new>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/help_format.h"
#include "scenario/suggest.h"
#include "cli/fault_injection.h"
#include "cli/logging.h"
#include "io/interrupt.h"
#include "io/std_streams.h"
#include "cli/invocation.h"
#include "report/version.h"

namespace kv::cli {

// Whether `sub` prints something a reader may stop reading early: a listing (`kvcheck list |
// head`), where a stdout pipe closed by its reader is no error. What `run`, `validate` and
// `conform` print is a verdict: losing it is.
static bool readers_may_stop_early(const CLI::App& sub) {
  return sub.get_name() == "list" || sub.get_name() == "schema";
}

// After an unknown option (CLI11's "The following arguments were not expected: --seedz"): the
// closest option of the command it was given to, if one is close enough to be a typo.
static void suggest_options(const CLI::App& app, const CLI::ParseError& e) {
  const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e);
  if (!extras) return;
  const CLI::App* where = &app;
  for (const CLI::App* sub : app.get_subcommands()) where = sub;  // the one given, if any
  std::vector<std::string> names;
  for (const CLI::App* a : {where, &app})
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& n : o->get_snames()) names.push_back("-" + n);
    }
  // The message lists the unexpected arguments after the colon, separated by spaces.
  const std::string what = e.what();
  std::istringstream words(what.substr(what.find(':') == std::string::npos ? 0 : what.find(':') + 1));
  std::string arg;
  while (words >> arg) {
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (const auto near = closest_name(flag, names))
      std::cerr << "kvcheck: " << flag << ": unknown option; did you mean " << *near << "?\n";
  }
}

// Runs the command line; `closed_pipe_is_quiet` says whether the stdout the command printed may
// be lost to a reader that went away.
static int dispatch(int argc, char** argv, bool& closed_pipe_is_quiet) {
  CLI::App app{"kvcheck — regression harness for the attention / KV-cache layer of LLM "
               "inference engines",
               "kvcheck"};
  use_help_format(app);  // before the subcommands, which inherit it
  app.set_version_flag("--version", describe(build_identity()));
  app.footer(exit_codes_help());
  app.require_subcommand(1);
  // -q/-v belong to the top level but may be written after the subcommand too.
  app.fallthrough();
  bool quiet = false, verbose = false;
  CLI::Option* q = app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
  app.add_flag("-v,--verbose", verbose, "Debug output on stderr (per-epoch progress)")->excludes(q);

  const Command commands[] = {add_run_command(app), add_validate_command(app),
                              add_list_command(app), add_schema_command(app),
                              add_conform_command(app), add_summarize_command(app),
                              add_completion_command(app), add_man_command(app)};
  set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here as "errors" with status 0 (help is a listing too);
    // everything else is usage.
    const bool help = app.exit(e) == 0;
    closed_pipe_is_quiet = help;
    if (!help) suggest_options(app, e);
    return help ? kExitOk : kExitBadInput;
  }

  setup_logging(quiet ? Verbosity::quiet : verbose ? Verbosity::verbose : Verbosity::normal);
  warn_if_fault_request_ignored();
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    closed_pipe_is_quiet = readers_may_stop_early(*c.app);
    return c.action();
  }
  return kExitBadInput;  // unreachable: require_subcommand(1)
}

// Whatever escaped the subcommand: kvcheck's own invariants (std::logic_error: the block pool,
// the scheduler) are a bug of kvcheck, exit 4; running out of memory or another failure of the
// machine is "cannot run", exit 3.
static int status_of_stray_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    std::cerr << "kvcheck: error: out of memory\n";
    return kExitCannotRun;
  } catch (const std::logic_error& e) {
    std::cerr << "kvcheck: " << internal_error_message(e.what()) << '\n';
    return kExitInternalError;
  } catch (const std::exception& e) {
    std::cerr << "kvcheck: error: " << e.what() << '\n';
    return kExitCannotRun;
  } catch (...) {
    std::cerr << "kvcheck: " << internal_error_message("an exception of unknown type") << '\n';
    return kExitInternalError;
  }
}

// `run --bisect` or `conform --bisect` anywhere on the command line: known before the parse, so
// that a usage error (an option this commit does not have) is mapped too.
static bool bisect_requested(int argc, char** argv) {
  bool takes_it = false;  // `run` and `conform` have --bisect
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "run") == 0 || std::strcmp(argv[i], "conform") == 0) takes_it = true;
    if (takes_it && std::strcmp(argv[i], "--bisect") == 0) return true;
  }
  return false;
}

int main(int argc, char** argv) {
  occupy_closed_std_fds();
  ignore_sigpipe();
  install_interrupt_handlers();
  int status = kExitOk;
  bool closed_pipe_is_quiet = false;
  try {
    status = dispatch(argc, argv, closed_pipe_is_quiet);
  } catch (...) {
    status = status_of_stray_exception();
  }
  // Output that did not reach stdout (a full disk, a closed descriptor, a reader gone) is never
  // a success. It is "cannot run" in the run's stated order: a mismatch found (1) stays 1.
  if (auto loss = flush_stdout(); loss && !(loss->reader_gone && closed_pipe_is_quiet)) {
    std::cerr << "kvcheck: error: " << loss->message << '\n';
    status = worse_status(status, kExitCannotRun);
  }
  return bisect_requested(argc, argv) ? bisect_status(status) : status;
}

}  // namespace kv::cli
