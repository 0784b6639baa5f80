// Code-generation backends behind one factory.
//
// A backend turns a lowered function into something callable with raw
// buffer pointers and size values. The CPU backend (LLVM, in process) is
// always built; a CUDA backend plugs in here when the toolkit is present.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "loom/hwspec.h"
#include "lower/loop_ir.h"

namespace loom::codegen {

class CompiledFunction {
 public:
  virtual ~CompiledFunction() = default;
  // buffers: LoweredFunc::args order; sizes: LoweredFunc::size_vars order.
  virtual void call(void* const* buffers, const int64_t* sizes) const = 0;
  virtual std::string ir() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<CompiledFunction> compile(const LoweredFunc& func) = 0;
};

// The backend for `target`; UserError when no backend serves its kind.
std::unique_ptr<Backend> make_backend(const HwSpec& target);

std::unique_ptr<Backend> make_cpu_backend(const CpuSpec& cpu);

}  // namespace loom::codegen
