// option_checks.h — validators of command-line values that several subcommands share, each
// failing with "expected ..., got VALUE" (CLI11 prefixes the option's name; exit 2).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <CLI/CLI.hpp>

namespace kv::cli {

// A path that is not empty: `--backend ''` must not read as "no backend".
CLI::Validator non_empty_path();

// Exactly a uint64 in decimal: CLI11 2.1 turns "-1" into 2^64-1 and saturates on overflow for an
// unsigned target.
CLI::Validator uint64_text();

// A label (scenario/labels.h).
CLI::Validator label_text();

// A finite number above 0: a tolerance of "nan" or "inf" would pass every case.
CLI::Validator positive_finite();

// Text that `parse` accepts: `parse` returns std::variant<T, std::string>, the string saying why
// it refuses (parse_seed_list, parse_field_setting). `name` names the validator.
template <class Parse>
CLI::Validator parsed_by(Parse parse, std::string name) {
  return CLI::Validator(
      [parse](std::string& v) {
        auto parsed = parse(v);
        const std::string* error = std::get_if<std::string>(&parsed);
        return error ? *error : std::string();
      },
      "", std::move(name));
}

}  // namespace kv::cli
