// list_scenarios.h — `kvcheck list scenarios`, registered under `list` (cmd_list.cpp), whose
// action runs it when it was given.
#pragma once

#include "cli/command.h"

namespace kv::cli {

Command add_list_scenarios(CLI::App& list);

}  // namespace kv::cli
