// The CPU backend: LoweredFunc -> LLVM IR -> O3 -> object -> JIT-linked entry point.
#include "codegen/backend.h"
#include "codegen/cpu/jit.h"
#include "codegen/cpu/llvm_codegen.h"
#include "loom/error.h"
#include "runtime/runtime_abi.h"

namespace loom::codegen {

namespace {

class CpuFunction : public CompiledFunction {
 public:
  CpuFunction(std::unique_ptr<JitCode> code, std::string ir)
      : code_(std::move(code)), entry_(reinterpret_cast<Entry>(code_->entry())), ir_(std::move(ir)) {}
  void call(void* const* buffers, const int64_t* sizes) const override {
    entry_(buffers, sizes);
    if (int64_t failed = loom_take_alloc_failure())
      throw UserError("out of memory: the kernel could not allocate " + std::to_string(failed) +
                      " bytes of scratch (packing) memory; its outputs are incomplete");
  }
  std::string ir() const override {
    return ir_.empty() ? "; (compiled without keeping its IR, or loaded from a cache)\n" : ir_;
  }

 private:
  using Entry = void (*)(void* const*, const int64_t*);
  std::unique_ptr<JitCode> code_;
  Entry entry_;
  std::string ir_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuSpec cpu) : cpu_(std::move(cpu)) {}
  CodeObject compile_object(const LoweredFunc& func, bool with_ir) override {
    ObjectCode code = compile_to_object(build_llvm_module(func, cpu_, "loom_" + func.name), with_ir);
    return CodeObject{std::move(code.entry), std::move(code.bytes), std::move(code.ir)};
  }
  std::unique_ptr<CompiledFunction> load(const CodeObject& object) override {
    return std::make_unique<CpuFunction>(load_object(ObjectCode{object.entry, object.bytes, ""}), object.ir);
  }
  std::string identity() override { return code_generator_identity() + " isa=" + target_features(cpu_); }

 private:
  CpuSpec cpu_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuSpec& cpu) { return std::make_unique<CpuBackend>(cpu); }

}  // namespace loom::codegen
