// Building a kernel's code for the dynamic-shape runtime through the disk
// cache, in two steps that each may hit:
//   request -> schedule: the operator's structure, planning sizes, the
//     options that choose the schedule, thread count, hwspec fingerprint,
//     loom version and code generator name the schedule text (so a later
//     process skips construction);
//   structure + schedule -> object: the same identity plus the schedule
//     name the compiled object (so it skips lowering and LLVM).
// Misses run construction (or replay the best record) and LLVM, and store both.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "loom/compile.h"
#include "runtime/kernel_cache.h"

namespace loom {

struct BuiltCode {
  std::unique_ptr<codegen::CompiledFunction> fn;
  std::string schedule;
  bool from_disk = false;  // loaded from the cache: neither construction nor LLVM ran
};

struct BuildRequest {
  const Operator* op = nullptr;     // concrete (specialized) or symbolic (generic)
  std::vector<int64_t> plan_sizes;  // per op.size_vars; empty for a concrete operator
  const CompileOptions* options = nullptr;
  HwSpec target;  // resolved
  int threads = 1;
  const KernelCache* cache = nullptr;  // null: no disk cache
};

// The kernel for the request; nothing (null fn) when `cache_only` and the
// cache does not hold it. Damaged cache entries add a warning and are
// rebuilt; a cache that cannot be written adds a warning.
BuiltCode build_code(const BuildRequest& request, bool cache_only, std::vector<std::string>& warnings);

}  // namespace loom
