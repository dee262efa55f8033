// cmd_validate.cpp — `kvcheck validate FILE...`: parse and check scenarios, run nothing; print
// each valid one's estimated memory and work (report/cost_text.h).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/load_scenarios.h"
#include "report/cost_text.h"

namespace kv::cli {

Command add_validate_command(CLI::App& parent) {
  CLI::App* app =
      parent.add_subcommand("validate", "Parse and check scenario files without running them");
  auto files = std::make_shared<std::vector<std::string>>();
  app->add_option("files", *files, "Scenario files (JSON)")->required();

  auto action = [files]() {
    LoadResult loaded = load_scenarios(*files);
    for (const auto& l : loaded.valid) {
      std::cout << "ok " << l.path << '\n';
      print_run_cost(std::cout, estimate_run_cost(l.scenario));
    }
    std::cout.flush();
    for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
    return loaded.ok() ? kExitOk : kExitBadInput;
  };
  return {app, action};
}

}  // namespace kv::cli
