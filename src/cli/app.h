// app.h — the kvcheck command line: `kvcheck run | validate | list`.
#pragma once

namespace kv::cli {

// Parses the command line, runs the subcommand and returns the process exit status
// (exit_codes.h). Never throws: usage errors give 2, anything unexpected gives 3.
int main(int argc, char** argv);

}  // namespace kv::cli
