// libFuzzer target: the CLI's argument parsing (flags, parameters, repeated
// options) and the operator each command line names. Lines of the input are
// arguments; the first is the operator. Only UserErrors may come out.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line) && args.size() < 16;) args.push_back(line);
  if (args.empty()) return 0;
  try {
    loom::cli::reject_repeated_flags(args);
    loom::cli::RunSettings settings;
    std::map<std::string, std::string> params;
    for (size_t i = 1; i < args.size(); ++i)
      if (!loom::cli::parse_setting(args[i], settings)) loom::cli::parse_param(args[i], params);
    loom::Operator op = loom::make_operator(args[0], params);
    (void)loom::run_memory_bytes(op);
  } catch (const loom::UserError&) {
  }
  return 0;
}
