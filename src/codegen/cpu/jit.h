// The process-wide ORC LLJIT instance that turns LLVM modules into code.
//
// Compiling is split in two so that compiles run in parallel with each other
// and with kernel calls: compile_to_object() optimizes a module at O3 and
// emits a relocatable object on the calling thread, with that thread's own
// TargetMachine and no lock; load_object() links an object into the JIT,
// which takes the one JIT lock for the (short) link. Objects are plain bytes,
// so a disk cache can keep them and a later process load them without
// running LLVM's optimizer or instruction selection. Each loaded object gets
// its own JITDylib, freed with its kernel, so objects never clash on names.
#pragma once

#include <memory>
#include <string>

#include "codegen/cpu/llvm_codegen.h"

namespace loom::codegen {

class JitCode {
 public:
  virtual ~JitCode() = default;
  virtual void* entry() const = 0;
};

struct ObjectCode {
  std::string entry;   // symbol of the entry point
  std::string bytes;   // a relocatable object file for the JIT's target
  std::string ir;      // the optimized module as text (for inspection); may be empty
};

// Optimizes `module` at O3 for the host (with the spec's ISA) and emits an
// object, with the optimized IR as text when `with_ir`. Thread-safe; takes
// no global lock.
ObjectCode compile_to_object(LlvmModule module, bool with_ir);

// Links `object` into the JIT and resolves its entry point. InternalError
// when the bytes are not a loadable object with that entry.
std::unique_ptr<JitCode> load_object(const ObjectCode& object);

// "LLVM 16.0.6 x86_64-pc-linux-gnu znver4 +avx512f,...": what the objects
// emitted here depend on besides the module (part of disk-cache keys).
std::string code_generator_identity();

}  // namespace loom::codegen
