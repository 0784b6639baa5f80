// Builds an LLVM module from a lowered function with IRBuilder.
//
// The module exports one entry point `void name(void** buffers, int64_t*
// sizes)`: buffers in LoweredFunc::args order, sizes in size_vars order. It
// calls an internal body function whose buffer parameters are noalias, so
// the optimizer may keep accumulators in registers. Vectorized loops use
// explicit vector types: contiguous accesses become vector loads/stores,
// other lane-varying accesses gathers/scatters, and reads guarded by a
// lane-varying condition masked loads. Parallel loops are outlined into a
// task function handed to loom_parallel_for.
#pragma once

#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "loom/hwspec.h"
#include "lower/loop_ir.h"

namespace loom::codegen {

struct LlvmModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::string entry;  // symbol name of the entry point
};

LlvmModule build_llvm_module(const LoweredFunc& func, const CpuSpec& cpu, const std::string& symbol);

// The host's CPU features as an LLVM feature string, minus the vector
// extensions (avx512f, avx2, fma) that `cpu.isa` does not list: a spec
// restricted to AVX2 compiles to AVX2 code with its 16 registers even on an
// AVX-512 host. A spec listing no ISA gets the host's features unchanged.
// The JIT's target machine and every generated function use it.
std::string target_features(const CpuSpec& cpu);

}  // namespace loom::codegen
