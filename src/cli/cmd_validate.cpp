// cmd_validate.cpp — `kvcheck validate FILE...`: parse and check scenarios, run nothing; print
// each valid one's estimated memory and work (report/cost_text.h).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/load_scenarios.h"
#include "cli/memory_fit.h"
#include "report/cost_text.h"
#include "report/format.h"

namespace kv::cli {

Command add_validate_command(CLI::App& parent) {
  CLI::App* app =
      parent.add_subcommand("validate", "Parse and check scenario files without running them");
  auto files = std::make_shared<std::vector<std::string>>();
  app->add_option("files", *files, "Scenario files (JSON)")->required();

  auto action = [files]() {
    LoadResult loaded = load_scenarios(*files);
    const std::optional<int64_t> host = host_available_bytes();
    for (const auto& l : loaded.valid) {
      std::cout << "ok " << l.path << '\n';
      const RunCost cost = estimate_run_cost(l.scenario);
      print_run_cost(std::cout, cost);
      if (host && cost.total_bytes() > *host)
        std::cout << "  note: more than this machine's " << format_bytes(*host)
                  << " available: `kvcheck run --device host` would refuse it\n";
    }
    std::cout.flush();
    for (const auto& msg : loaded.errors) spdlog::error("{}", msg);
    return loaded.ok() ? kExitOk : kExitBadInput;
  };
  return {app, action};
}

}  // namespace kv::cli
