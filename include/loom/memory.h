// Memory a run needs, against what this process can get.
//
// A run (loom run, loom tune, a benchmark) allocates the operator's inputs
// and outputs, packing scratch inside generated code, and the reference
// check's working set. check_run_memory() refuses, with a UserError naming
// the sizes and the limit, a run whose estimate exceeds the memory this
// process can get, instead of ending in the kernel's OOM killer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/operator.h"

namespace loom {

struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // what sets it: "MemAvailable", "cgroup memory.max", "ulimit -v"
};

// The smallest of the machine's available memory, the cgroup's remaining
// limit and the address-space limit.
MemoryLimit memory_limit();

// Upper-bound estimate for `op` at `sizes` (its symbolic sizes, in order):
// inputs and outputs, as much again as the inputs in packing scratch, and
// twice the outputs for the reference check.
int64_t run_memory_bytes(const Operator& op, const std::vector<int64_t>& sizes = {});

void check_run_memory(const Operator& op, const std::vector<int64_t>& sizes = {});

}  // namespace loom
