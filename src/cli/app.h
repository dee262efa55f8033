// app.h — the kvcheck command line: `kvcheck run | validate | list | schema | conform`.
#pragma once

namespace kv::cli {

// Parses the command line, runs the subcommand and returns the process exit status
// (exit_codes.h). Never throws: usage errors give 2, a failure of the machine 3, a broken
// invariant of kvcheck's own 4; under `run --bisect` they are mapped for git bisect.
int main(int argc, char** argv);

}  // namespace kv::cli
