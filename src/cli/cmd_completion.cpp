// cmd_completion.cpp — `kvcheck completion bash` and `kvcheck man`: the command line described
// for bash and for man(1), generated from the parser's own tree (cli/cli_description.h).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/cli_description.h"
#include "cli/command.h"
#include "cli/exit_codes.h"

namespace kv::cli {

Command add_completion_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "completion", "Print a bash completion script: source it, or install it (cmake --install "
                    "does) as share/bash-completion/completions/kvcheck");
  app->add_option("shell", "The shell (bash)")->required()->check(CLI::IsMember({"bash"}));
  CLI::App* root = &parent;
  return {app, [root]() {
            std::cout << bash_completion(*root) << std::flush;
            return static_cast<int>(kExitOk);
          }};
}

Command add_man_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "man", "Print kvcheck's man page (roff; cmake --install installs it as man1/kvcheck.1)");
  CLI::App* root = &parent;
  return {app, [root]() {
            std::cout << man_page(*root) << std::flush;
            return static_cast<int>(kExitOk);
          }};
}

}  // namespace kv::cli
