// command.h — how a subcommand plugs into the app: each cmd_*.cpp registers its options on a
// CLI::App* and returns the action to take when that subcommand was given.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace kv::cli {

struct Command {
  CLI::App* app = nullptr;      // the subcommand, owned by the parent app
  std::function<int()> action;  // runs after a successful parse; returns the exit status
};

Command add_run_command(CLI::App& parent);
Command add_validate_command(CLI::App& parent);
Command add_list_command(CLI::App& parent);
Command add_schema_command(CLI::App& parent);
Command add_conform_command(CLI::App& parent);
Command add_summarize_command(CLI::App& parent);
Command add_completion_command(CLI::App& parent);
Command add_man_command(CLI::App& parent);

}  // namespace kv::cli
