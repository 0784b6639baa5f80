// The process-wide ORC LLJIT instance that turns LLVM modules into code.
//
// One JIT serves every kernel: creating it costs milliseconds, adding a
// module costs the O3 pipeline plus instruction selection. Each kernel's
// code lives under its own resource tracker and is freed with the kernel.
#pragma once

#include <memory>
#include <string>

#include "codegen/cpu/llvm_codegen.h"

namespace loom::codegen {

class JitCode {
 public:
  virtual ~JitCode() = default;
  virtual void* entry() const = 0;
  virtual const std::string& optimized_ir() const = 0;
};

// Optimizes `module` at O3 for the host CPU and links it into the JIT.
std::unique_ptr<JitCode> jit_compile(LlvmModule module);

}  // namespace loom::codegen
