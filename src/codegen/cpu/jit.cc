#include "codegen/cpu/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

#include "loom/error.h"
#include "runtime/runtime_abi.h"

namespace loom::codegen {

namespace {

std::string llvm_error_text(llvm::Error err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << err;
  return os.str();
}

template <typename T>
T unwrap(llvm::Expected<T> value, const char* what) {
  if (!value) throw InternalError(std::string(what) + ": " + llvm_error_text(value.takeError()));
  return std::move(*value);
}

class Engine {
 public:
  static Engine& get() {
    static Engine engine;
    return engine;
  }

  std::mutex mutex;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;

 private:
  Engine() {
    // The post-RA list scheduler is quadratic in basic-block size and fully
    // unrolled micro-kernels make large blocks: it can cost seconds per
    // kernel for little gain on out-of-order cores. The machine scheduler
    // before register allocation still runs.
    const char* args[] = {"loom", "-post-RA-scheduler=false"};
    llvm::cl::ParseCommandLineOptions(2, args);
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
    jtmb.setCPU(llvm::sys::getHostCPUName().str());
    jtmb.setFeatures(target_features(CpuSpec{}));
    jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    tm = unwrap(jtmb.createTargetMachine(), "creating the target machine");
    jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "creating the JIT");

    auto& main = jit->getMainJITDylib();
    const char prefix = jit->getDataLayout().getGlobalPrefix();
    main.addGenerator(unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                             "opening the process's symbols"));
    llvm::orc::SymbolMap runtime;
    auto& es = jit->getExecutionSession();
    auto define = [&](const char* name, void* addr) {
      runtime[es.intern(name)] = llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
    };
    define("loom_parallel_for", reinterpret_cast<void*>(&loom_parallel_for));
    define("loom_alloc", reinterpret_cast<void*>(&loom_alloc));
    define("loom_free", reinterpret_cast<void*>(&loom_free));
    if (auto err = main.define(llvm::orc::absoluteSymbols(runtime)))
      throw InternalError("defining runtime symbols: " + llvm_error_text(std::move(err)));
  }
};

// Compile time is bounded by code size. loom unrolls micro-kernels itself
// (bounded by construction's legality rules); beyond kUnrollBudget
// instructions before optimization, LLVM's own loop unrolling, which can
// multiply constant-trip remainder loops into minutes of work, is turned
// off, and beyond kMaxInstructions the kernel is refused.
constexpr size_t kUnrollBudget = 20000;
constexpr size_t kMaxInstructions = 400000;

size_t instruction_count(const llvm::Module& m) {
  size_t n = 0;
  for (const llvm::Function& f : m) n += f.getInstructionCount();
  return n;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  const size_t size = instruction_count(m);
  if (size > kMaxInstructions)
    throw UserError("the generated kernel has " + std::to_string(size) + " instructions before optimization, over " +
                    "the budget of " + std::to_string(kMaxInstructions) + "; choose a smaller register tile or unroll");
  llvm::PipelineTuningOptions tuning;
  if (size > kUnrollBudget) {
    tuning.LoopUnrolling = false;
    tuning.LoopInterleaving = false;
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

class LljitCode : public JitCode {
 public:
  LljitCode(void* entry, std::string ir, llvm::orc::ResourceTrackerSP tracker)
      : entry_(entry), ir_(std::move(ir)), tracker_(std::move(tracker)) {}
  ~LljitCode() override {
    std::lock_guard<std::mutex> lock(Engine::get().mutex);
    if (auto err = tracker_->remove()) llvm::consumeError(std::move(err));
  }
  void* entry() const override { return entry_; }
  const std::string& optimized_ir() const override { return ir_; }

 private:
  void* entry_;
  std::string ir_;
  llvm::orc::ResourceTrackerSP tracker_;
};

}  // namespace

std::unique_ptr<JitCode> jit_compile(LlvmModule module) {
  Engine& engine = Engine::get();
  std::lock_guard<std::mutex> lock(engine.mutex);
  module.module->setDataLayout(engine.jit->getDataLayout());
  module.module->setTargetTriple(engine.tm->getTargetTriple().str());
  optimize(*module.module, *engine.tm);
  std::string ir;
  llvm::raw_string_ostream os(ir);
  module.module->print(os, nullptr);
  os.flush();

  auto& main = engine.jit->getMainJITDylib();
  auto tracker = main.createResourceTracker();
  llvm::orc::ThreadSafeModule tsm(std::move(module.module), std::move(module.context));
  if (auto err = engine.jit->addIRModule(tracker, std::move(tsm)))
    throw InternalError("adding a module to the JIT: " + llvm_error_text(std::move(err)));
  auto addr = unwrap(engine.jit->lookup(main, module.entry), "looking up the kernel entry");
  return std::make_unique<LljitCode>(addr.toPtr<void*>(), std::move(ir), tracker);
}

}  // namespace loom::codegen
