// cli_description.h — the command line described for other tools, generated from the one CLI11
// tree that parses it (so they cannot drift from it): a bash completion script (`kvcheck
// completion bash`: subcommands, each one's options, the names an option takes, scenario files)
// and a man page (`kvcheck man`: every subcommand and option with its help text, the exit codes).
// `cmake --install` installs both (CMakeLists.txt).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kv::cli {

std::string bash_completion(const CLI::App& root);
std::string man_page(const CLI::App& root);

}  // namespace kv::cli
