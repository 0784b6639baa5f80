// The loom command line as a function: the `loom` binary and `python -m loom` both call it.
#include <iostream>

#include "cli/cli.h"

namespace {

const char* kUsage =
    "usage: loom <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  ops                       list operators and their parameters\n"
    "  run <op> <param>=<value>... [--strategy=construct|roller|default] [--top-k=K]\n"
    "                            [--threads=N] [--hwspec=NAME|FILE] [--seed=S] [--walk-steps=N]\n"
    "                            [--repeats=N] [--json] [--dump-ir]\n"
    "                            compile, run on random inputs, check against the reference, time\n"
    "                            [--records=FILE] apply the best recorded schedule\n"
    "                            [--emit-source=FILE] write the kernel source (LLVM IR; CUDA C for a GPU)\n"
    "                            a GPU hwspec (h100, a100, ...) runs on a CUDA device when present, else\n"
    "                            the kernels' OpenCL twin on PoCL (executed_on: opencl-cpu)\n"
    "  tune <op> <param>=<value>... [--strategy=hybrid|search|random|construct|roller] [--trials=N]\n"
    "                            [--batch=B] [--records=FILE] [--threads=N] [--hwspec=...] [--seed=S]\n"
    "                            [--cost-model=xgboost|xgboost-rank|xgboost-residual|analytic] [--timeout=SECONDS] [--json]\n"
    "  tune --workload=bert|resnet50 --trials=N [--scheduler=gradient|round-robin] [--records=FILE] [--json]\n"
    "                            measure, learn and keep the fastest correct kernel\n"
    "  workload [bert|resnet50] [--threads=N] [--strategy=construct] [--top-k=K] [--json]\n"
    "                            a network's distinct operators: BERT-base at sequence 128 (12 layers)\n"
    "  dynamic <op> <param>=<value>... --dim=NAME --values=V1,V2,... [--threads=N] [--cache-dir=DIR]\n"
    "          [--compile-cpus=C1,C2] [--specialize-after=N] [--hwspec=...] [--repeats=N] [--json]\n"
    "                            call the operator with NAME symbolic, in that order of values, through\n"
    "                            the dynamic-shape runtime; check every call; compare generic,\n"
    "                            specialized and static kernels per value (cache: $LOOM_CACHE_DIR)\n"
    "  hwspecs                   list bundled hardware specs\n"
    "  hwspecs show <name|file>  print a spec as YAML that loads back (host: measured, or cached)\n";

}  // namespace

namespace loom::cli {

int run_command_line(std::vector<std::string> args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].size() > 4096) {
      std::cerr << "loom: error: argument #" << i + 1 << " is " << args[i].size() << " characters long (at most 4096): '"
                << args[i].substr(0, 40) << "...'\n";
      return 2;
    }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "ops") return command_ops(args);
    if (command == "run") return command_run(args);
    if (command == "workload") return command_workload(args);
    if (command == "tune") return command_tune(args);
    if (command == "hwspecs") return command_hwspecs(args);
    if (command == "dynamic") return command_dynamic(args);
    std::cerr << "loom: error: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const loom::UserError& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "loom: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace loom::cli
