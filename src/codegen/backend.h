// Code-generation backends behind one factory.
//
// A backend turns a lowered function into something callable with raw
// buffer pointers and size values. The CPU backend (LLVM, in process) and
// the GPU backend (CUDA C and OpenCL C source, run through the CUDA driver
// or OpenCL, both opened at run time) are always built.
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
  // Where the last call ran: "cpu" (in process), "cuda", "opencl-cpu" or "opencl-gpu"; empty before any call.
  virtual std::string executed_on() const { return "cpu"; }
  // Device-only time of one call in ms, the mean of `repeats` after a warm-up
  // (GPU functions on a CUDA device); UserError elsewhere.
  virtual double time_on_device(void* const* buffers, const int64_t* sizes, int repeats) const;
  // The generated kernel source alone: LLVM IR for the CPU; CUDA C (or its OpenCL C twin) for a GPU.
  virtual std::string source(bool opencl) const { return ir(); }
};

// A compiled function as bytes, for caches: what load() turns back into a
// CompiledFunction in this or a later process on the same machine.
struct CodeObject {
  std::string entry;  // symbol of the entry point
  std::string bytes;  // backend-specific (an ELF object for the CPU)
  std::string ir;     // optimized IR as text; empty when the code came from a cache
};

class Backend {
 public:
  virtual ~Backend() = default;
  // compile_object() does the expensive work and takes no global lock, so
  // several threads may compile at once; load() only links. `with_ir`
  // keeps the optimized IR as text (it can be large; caches skip it).
  virtual CodeObject compile_object(const LoweredFunc& func, bool with_ir) = 0;
  virtual std::unique_ptr<CompiledFunction> load(const CodeObject& object) = 0;
  std::unique_ptr<CompiledFunction> compile(const LoweredFunc& func) { return load(compile_object(func, true)); }
  // What a CodeObject depends on besides the function: code generator,
  // version, target CPU and features (part of disk-cache keys).
  virtual std::string identity() = 0;
};

// The backend for `target`; UserError when no backend serves its kind.
std::unique_ptr<Backend> make_backend(const HwSpec& target);

std::unique_ptr<Backend> make_cpu_backend(const CpuSpec& cpu);
std::unique_ptr<Backend> make_gpu_backend(const GpuSpec& gpu);

}  // namespace loom::codegen
