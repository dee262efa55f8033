// list_scenarios.h — `kvcheck list scenarios`, registered under `list` (cmd_list.cpp).
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace kv::cli {

struct ListScenarios {
  CLI::App* app = nullptr;      // the `scenarios` subcommand of `list`
  std::function<int()> action;  // runs when it was given
};

ListScenarios add_list_scenarios(CLI::App& list);

}  // namespace kv::cli
