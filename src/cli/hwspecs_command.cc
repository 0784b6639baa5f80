// loom hwspecs [show NAME]: the bundled specs, and any spec (the measured
// host's included) printed as YAML that `--hwspec=FILE` loads back.
#include <iostream>

#include "cli/cli.h"
#include "loom/error.h"
#include "loom/hwspec.h"

namespace loom::cli {

int command_hwspecs(const std::vector<std::string>& args) {
  if (args.empty()) {
    for (const auto& n : bundled_hwspec_names()) std::cout << n << "\n";
    return 0;
  }
  LOOM_USER_CHECK(args[0] == "show", "'loom hwspecs' takes no arguments or 'show NAME', got '", args[0], "'");
  LOOM_USER_CHECK(args.size() == 2, "'loom hwspecs show' takes one spec name or file, got ", args.size() - 1);
  const HwSpec spec = load_hwspec(args[1]);
  std::cout << "# " << spec.source << "\n" << hwspec_to_yaml(spec);
  return 0;
}

}  // namespace loom::cli
