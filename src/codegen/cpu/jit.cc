#include "codegen/cpu/jit.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Target/TargetMachine.h>

#include <atomic>
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

  std::mutex link_mutex;  // held over adding, looking up and removing code; never over compiling
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> jtmb;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string identity;

  // A TargetMachine per compiling thread: LLVM's are not safe to share
  // between threads that optimize or emit code at once.
  llvm::TargetMachine& thread_target_machine() {
    thread_local std::unique_ptr<llvm::TargetMachine> tm;
    if (!tm) tm = unwrap(jtmb->createTargetMachine(), "creating the target machine");
    return *tm;
  }

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
    jtmb = std::make_unique<llvm::orc::JITTargetMachineBuilder>(
        unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host"));
    jtmb->setCPU(llvm::sys::getHostCPUName().str());
    jtmb->setFeatures(target_features(CpuSpec{}));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create(), "creating the JIT");
    identity = std::string("LLVM ") + LLVM_VERSION_STRING + " " + jtmb->getTargetTriple().str() + " " +
               jtmb->getCPU() + " " + jtmb->getFeatures().getString();

    auto& main = jit->getMainJITDylib();
    const char prefix = jit->getDataLayout().getGlobalPrefix();
    main.addGenerator(unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                             "opening the process's symbols"));
    llvm::orc::SymbolMap runtime;
    auto& es = jit->getExecutionSession();
    auto define = [&](const char* name, void* addr) {
      runtime[es.intern(name)] =
          llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
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

std::string emit_object(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
    throw InternalError("the target machine cannot emit object files");
  pm.run(m);
  return std::string(buffer.data(), buffer.size());
}

class LljitCode : public JitCode {
 public:
  LljitCode(void* entry, llvm::orc::JITDylib& dylib) : entry_(entry), dylib_(dylib) {}
  ~LljitCode() override {
    Engine& engine = Engine::get();
    std::lock_guard<std::mutex> lock(engine.link_mutex);
    if (auto err = engine.jit->getExecutionSession().removeJITDylib(dylib_)) llvm::consumeError(std::move(err));
  }
  void* entry() const override { return entry_; }

 private:
  void* entry_;
  llvm::orc::JITDylib& dylib_;
};

}  // namespace

ObjectCode compile_to_object(LlvmModule module, bool with_ir) {
  Engine& engine = Engine::get();
  llvm::TargetMachine& tm = engine.thread_target_machine();
  module.module->setDataLayout(tm.createDataLayout());
  module.module->setTargetTriple(tm.getTargetTriple().str());
  optimize(*module.module, tm);
  ObjectCode code;
  code.entry = module.entry;
  if (with_ir) {
    llvm::raw_string_ostream os(code.ir);
    module.module->print(os, nullptr);
    os.flush();
  }
  code.bytes = emit_object(*module.module, tm);
  return code;
}

std::unique_ptr<JitCode> load_object(const ObjectCode& object) {
  static std::atomic<uint64_t> counter{0};
  Engine& engine = Engine::get();
  std::lock_guard<std::mutex> lock(engine.link_mutex);
  auto& es = engine.jit->getExecutionSession();
  auto& dylib = es.createBareJITDylib("loom_kernel_" + std::to_string(counter++));
  dylib.addToLinkOrder(engine.jit->getMainJITDylib());
  auto fail = [&](const std::string& what, llvm::Error err) -> std::unique_ptr<JitCode> {
    const std::string text = llvm_error_text(std::move(err));
    if (auto e = es.removeJITDylib(dylib)) llvm::consumeError(std::move(e));
    throw InternalError(what + ": " + text);
  };
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object.bytes, object.entry);
  if (auto err = engine.jit->addObjectFile(dylib, std::move(buffer)))
    return fail("adding an object to the JIT", std::move(err));
  auto addr = engine.jit->lookup(dylib, object.entry);
  if (!addr) return fail("looking up the kernel entry '" + object.entry + "'", addr.takeError());
  return std::make_unique<LljitCode>(addr->toPtr<void*>(), dylib);
}

std::string code_generator_identity() { return Engine::get().identity; }

}  // namespace loom::codegen
