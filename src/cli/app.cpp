// app.cpp — builds the CLI11 app from the subcommands (cmd_*.cpp), maps parse errors and stray
// exceptions onto kvcheck's exit codes, and dispatches.
#include "cli/app.h"

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "report/version.h"

namespace kv::cli {

static int dispatch(int argc, char** argv) {
  CLI::App app{"kvcheck — regression harness for the attention / KV-cache layer of LLM "
               "inference engines",
               "kvcheck"};
  app.set_version_flag("--version", kKvcheckVersion);
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);
  // -q/-v belong to the top level but may be written after the subcommand too.
  app.fallthrough();
  bool quiet = false, verbose = false;
  CLI::Option* q = app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
  app.add_flag("-v,--verbose", verbose, "Debug output on stderr (per-epoch progress)")->excludes(q);

  const Command commands[] = {add_run_command(app), add_validate_command(app),
                              add_list_command(app), add_schema_command(app),
                              add_conform_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here as "errors" with status 0; everything else is usage.
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }

  setup_logging(quiet ? Verbosity::quiet : verbose ? Verbosity::verbose : Verbosity::normal);
  for (const Command& c : commands)
    if (c.app->parsed()) return c.action();
  return kExitBadInput;  // unreachable: require_subcommand(1)
}

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kvcheck: error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "kvcheck: error: unknown exception\n";
  }
  return kExitCannotRun;
}

}  // namespace kv::cli
