// logging.h — kvcheck's diagnostics channel: spdlog on stderr, so stdout carries only results
// (the table or the JSON) and can be piped.
#pragma once

namespace kv::cli {

enum class Verbosity { quiet, normal, verbose };  // -q: warnings and errors; -v: debug

// Installs the default logger: "level: message" on stderr, coloured only when stderr is a
// terminal and NO_COLOR is unset.
void setup_logging(Verbosity v);

}  // namespace kv::cli
