// option_checks.h — validators of command-line values that several subcommands share, each
// failing with "expected ..., got VALUE" (CLI11 prefixes the option's name; exit 2).
#pragma once

#include <CLI/CLI.hpp>

namespace kv::cli {

// A path that is not empty: `--backend ''` must not read as "no backend".
CLI::Validator non_empty_path();

// Exactly a uint64 in decimal: CLI11 2.1 turns "-1" into 2^64-1 and saturates on overflow for an
// unsigned target.
CLI::Validator uint64_text();

// A finite number above 0: a tolerance of "nan" or "inf" would pass every case.
CLI::Validator positive_finite();

}  // namespace kv::cli
