// kvcheck — entry point. The subcommands live in src/cli/, one file each.
#include "cli/app.h"

int main(int argc, char** argv) { return kv::cli::main(argc, argv); }
