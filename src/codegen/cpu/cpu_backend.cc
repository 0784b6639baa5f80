// The CPU backend: LoweredFunc -> LLVM IR -> O3 -> JIT-compiled entry point.
#include <atomic>

#include "codegen/backend.h"
#include "codegen/cpu/jit.h"
#include "codegen/cpu/llvm_codegen.h"
#include "loom/error.h"
#include "runtime/runtime_abi.h"

namespace loom::codegen {

namespace {

class CpuFunction : public CompiledFunction {
 public:
  explicit CpuFunction(std::unique_ptr<JitCode> code)
      : code_(std::move(code)), entry_(reinterpret_cast<Entry>(code_->entry())) {}
  void call(void* const* buffers, const int64_t* sizes) const override {
    entry_(buffers, sizes);
    if (int64_t failed = loom_take_alloc_failure())
      throw UserError("out of memory: the kernel could not allocate " + std::to_string(failed) +
                      " bytes of scratch (packing) memory; its outputs are incomplete");
  }
  std::string ir() const override { return code_->optimized_ir(); }

 private:
  using Entry = void (*)(void* const*, const int64_t*);
  std::unique_ptr<JitCode> code_;
  Entry entry_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuSpec cpu) : cpu_(std::move(cpu)) {}
  std::unique_ptr<CompiledFunction> compile(const LoweredFunc& func) override {
    static std::atomic<int> counter{0};
    std::string symbol = "loom_" + func.name + "_" + std::to_string(counter++);
    return std::make_unique<CpuFunction>(jit_compile(build_llvm_module(func, cpu_, symbol)));
  }

 private:
  CpuSpec cpu_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuSpec& cpu) { return std::make_unique<CpuBackend>(cpu); }

}  // namespace loom::codegen
