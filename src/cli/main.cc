// loom: build, run and check tensor kernels from the command line.
#include "cli/cli.h"

int main(int argc, char** argv) { return loom::cli::run_command_line(std::vector<std::string>(argv + 1, argv + argc)); }
