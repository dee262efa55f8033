// cmd_validate.cpp — `kvcheck validate FILE...`: parse and check scenarios, run nothing; print
// each valid one's estimated memory and work (report/cost_text.h).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/host_memory.h"
#include "cli/load_scenarios.h"
#include "cli/memory_fit.h"
#include "report/cost_text.h"

namespace kv::cli {

Command add_validate_command(CLI::App& parent) {
  CLI::App* app =
      parent.add_subcommand("validate", "Parse and check scenario files without running them");
  auto files = std::make_shared<std::vector<std::string>>();
  app->add_option("files", *files, "Scenario files (JSON), or folders of them")->required();

  auto action = [files]() {
    LoadResult loaded = load_scenarios(*files);
    const MemoryLimits host = host_memory_limits();  // device_is_host: what `--device host` sees
    for (const auto& l : loaded.valid) {
      std::cout << "ok " << l.path << '\n';
      const RunCost cost = estimate_run_cost(l.scenario);
      print_run_cost(std::cout, cost);
      if (auto why = memory_refusal(l.scenario.name, cost, host))
        std::cout << "  note: `kvcheck run --device host` would refuse it here: " << *why << '\n';
    }
    std::cout.flush();
    for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
    return loaded.ok() ? kExitOk : kExitBadInput;
  };
  return {app, action};
}

}  // namespace kv::cli
