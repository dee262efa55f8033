// cmd_schema.cpp — `kvcheck schema KIND`: print the JSON Schema of one of kvcheck's formats, or
// with --markdown the docs' table of its fields. Both are generated from the code (for scenarios,
// the parser's field table), so the committed copies are regenerated with this command:
//
//   kvcheck schema scenario > scenarios/schema/scenario.schema.json
//   kvcheck schema result > scenarios/schema/result.schema.json
//   kvcheck schema run > scenarios/schema/run.schema.json
//
// `kvcheck schema exit-codes` prints the exit-code table (exit_codes.h) as JSON, or the
// "Exit codes" table of docs/reliability.md with --markdown.
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "report/result_schema.h"
#include "report/run_schema.h"
#include "scenario/schema_json.h"
#include "scenario/schema_markdown.h"

namespace kv::cli {
namespace {

// One format kvcheck reads or writes.
struct SchemaKind {
  const char* name;
  const char* help;
  std::string (*json)();      // the JSON Schema, exactly as committed
  std::string (*markdown)();  // the docs' table of the fields; nullptr when there is none
};

std::string exit_codes_json() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ExitCodeRow& r : exit_code_table())
    rows.push_back({{"code", r.code},
                    {"meaning", r.meaning},
                    {"under_bisect", *r.under_bisect ? r.under_bisect : "the same"}});
  return nlohmann::ordered_json{{"schema", "kvcheck.exit-codes/1"},
                                {"exit_codes", rows},
                                {"order", exit_order_text()}}
             .dump(2) +
         "\n";
}

const SchemaKind kKinds[] = {
    {"scenario", "Scenario files (scenarios/schema/scenario.schema.json)", scenario_schema_text,
     scenario_fields_markdown},
    {"result", "Result documents of `kvcheck run` (scenarios/schema/result.schema.json)",
     result_schema_text, nullptr},
    {"run", "The document of `kvcheck run --json` (scenarios/schema/run.schema.json)",
     run_schema_text, nullptr},
    {"exit-codes",
     "kvcheck's exit statuses (docs/reliability.md's \"Exit codes\" table with --markdown)",
     exit_codes_json, exit_codes_markdown},
};

}  // namespace

Command add_schema_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "schema", "Print the JSON Schema of a kvcheck format, generated from the code");
  app->require_subcommand(1);
  auto markdown = std::make_shared<bool>(false);
  std::vector<std::pair<CLI::App*, const SchemaKind*>> kinds;
  for (const SchemaKind& k : kKinds) {
    CLI::App* sub = app->add_subcommand(k.name, k.help);
    if (k.markdown)
      sub->add_flag("--markdown", *markdown,
                    "Print the docs' table (Markdown) instead of the JSON");
    kinds.emplace_back(sub, &k);
  }

  auto action = [kinds, markdown]() {
    for (const auto& [sub, kind] : kinds) {
      if (!sub->parsed()) continue;
      std::cout << (*markdown ? kind->markdown() : kind->json()) << std::flush;
      return static_cast<int>(kExitOk);
    }
    return static_cast<int>(kExitBadInput);  // unreachable: require_subcommand(1)
  };
  return {app, action};
}

}  // namespace kv::cli
