// The loom command line: shared pieces of its commands.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/loom.h"

namespace loom::cli {

// What one `loom run` measured.
struct RunOutcome {
  Operator op;
  std::string strategy;
  std::string hwspec;
  int threads = 0;
  int top_k = 1;
  CompileReport report;
  double time_ms = 0;
  double gflops = 0;
  CheckResult check;
  std::string executed_on;  // cpu | cuda | opencl-cpu | opencl-gpu
  // GPU targets, when NVRTC is present: the CUDA C compiled for the spec's compute capability.
  struct Nvrtc {
    std::string arch;
    double compile_ms = 0;
    int registers = 0;  // the largest of the kernels'
    int64_t spill_bytes = 0, shared_bytes = 0;
  };
  std::optional<Nvrtc> nvrtc;
};

struct RunSettings {
  std::string strategy = "construct";
  std::string hwspec = "host";
  int threads = 0;
  int top_k = 1;
  int walk_steps = 0;  // 0: the library default
  uint64_t seed = 1;
  TimingOptions timing;
  bool dump_ir = false;  // print the schedule, loop IR and LLVM IR to stderr
  std::string records;   // apply the best schedule of this records file
  std::string emit_source;  // write the generated kernel source (LLVM IR, or CUDA C for a GPU) to this file
};

// Builds, compiles, runs on random inputs, checks and times one operator.
RunOutcome run_operator(const std::string& name, const std::map<std::string, std::string>& params,
                        const RunSettings& settings);

// The whole command line (arguments after the program name): usage, errors
// as messages and exit codes (0 ok, 1 a wrong result, 2 bad input, 3 a bug).
int run_command_line(std::vector<std::string> args);

int command_ops(const std::vector<std::string>& args);
int command_run(const std::vector<std::string>& args);
int command_workload(const std::vector<std::string>& args);
int command_tune(const std::vector<std::string>& args);
int command_hwspecs(const std::vector<std::string>& args);
int command_dynamic(const std::vector<std::string>& args);

// Operator parameters for JSON: numbers as numbers, choices as strings.
nlohmann::json params_json(const std::map<std::string, std::string>& params);
// Adds "<key>=<value>" to params; UserError when malformed or repeated.
void parse_param(const std::string& arg, std::map<std::string, std::string>& params);

// "--name=value" -> value when the flag matches.
bool flag_value(const std::string& arg, const std::string& name, std::string& value);
// Parses the flags shared by `run` and `workload`; false when `arg` is none of them.
bool parse_setting(const std::string& arg, RunSettings& settings);
// An integer flag value in [minimum, maximum]; UserError naming the flag otherwise.
int parse_count(const std::string& flag, const std::string& value, int minimum, int maximum);
// UserError when an option (--name, with or without a value) appears twice.
void reject_repeated_flags(const std::vector<std::string>& args);

}  // namespace loom::cli
