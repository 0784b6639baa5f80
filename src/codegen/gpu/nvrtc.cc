#include "codegen/gpu/nvrtc.h"


#include <chrono>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <sstream>
#include <vector>

#include "loom/error.h"
#include "support/dynamic_library.h"

namespace loom::codegen {

namespace {

// The part of NVRTC's C API loom uses (nvrtc.h), declared here so that no header is needed at build time.
using Program = void*;
struct Api {
  int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*cubin_size)(Program, size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  int (*version)(int*, int*) = nullptr;
  std::string error;
};

const Api& api() {
  static const Api a = [] {
    Api a;
    std::vector<std::string> names;
    if (const char* home = std::getenv("CUDA_HOME")) names.push_back(std::string(home) + "/lib64/libnvrtc.so");
    for (const char* n : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
      names.push_back(n);
    void* lib = nullptr;
    for (const std::string& n : names)
      if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      a.error = "libnvrtc not found (install the CUDA Toolkit or set CUDA_HOME)";
      return a;
    }
    bool ok = bind_symbol(lib, "nvrtcCreateProgram", a.create) && bind_symbol(lib, "nvrtcCompileProgram", a.compile) &&
              bind_symbol(lib, "nvrtcGetProgramLogSize", a.log_size) && bind_symbol(lib, "nvrtcGetProgramLog", a.log) &&
              bind_symbol(lib, "nvrtcGetCUBINSize", a.cubin_size) && bind_symbol(lib, "nvrtcGetCUBIN", a.cubin) &&
              bind_symbol(lib, "nvrtcDestroyProgram", a.destroy) && bind_symbol(lib, "nvrtcVersion", a.version);
    if (!ok) a.error = "libnvrtc lacks a function loom needs";
    return a;
  }();
  return a;
}

// NVRTC caches compiled programs from version 12.9 on, and knows the option that turns the cache off.
bool nvrtc_caches(const Api& a) {
  int major = 0, minor = 0;
  return a.version(&major, &minor) == 0 && (major > 12 || (major == 12 && minor >= 9));
}

}  // namespace

bool nvrtc_available(std::string* why) {
  if (why) *why = api().error;
  return api().error.empty();
}

std::string sm_arch(const std::string& cc) {
  static const std::regex form("([0-9]+)\\.([0-9]+)");
  std::smatch m;
  LOOM_USER_CHECK(std::regex_match(cc, m, form), "compute_capability '", cc, "' is not of the form MAJOR.MINOR");
  return "sm_" + m[1].str() + m[2].str();
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          bool need_report) {
  const Api& a = api();
  LOOM_USER_CHECK(a.error.empty(), "NVRTC: ", a.error);
  auto t0 = std::chrono::steady_clock::now();
  Program prog = nullptr;
  if (a.create(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != 0)
    throw InternalError("nvrtcCreateProgram failed for " + name);
  const std::string arch_flag = "-arch=" + arch;
  std::vector<const char*> options = {arch_flag.c_str(), "--ptxas-options=-v", "-default-device"};
  if (need_report && nvrtc_caches(a)) options.push_back("--no-cache");
  const int rc = a.compile(prog, int(options.size()), options.data());
  NvrtcOutput out;
  size_t n = 0;
  a.log_size(prog, &n);
  out.log.resize(n);
  if (n) a.log(prog, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (rc != 0) {
    a.destroy(&prog);
    throw InternalError("generated CUDA C does not compile for " + arch + ":\n" + out.log);
  }
  a.cubin_size(prog, &n);
  out.cubin.resize(n);
  a.cubin(prog, out.cubin.data());
  a.destroy(&prog);
  out.kernels = parse_ptxas_report(out.log);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::map<std::string, KernelResources> parse_ptxas_report(const std::string& log) {
  static const std::regex entry("Compiling entry function '([^']+)'");
  static const std::regex regs("Used ([0-9]+) registers");
  static const std::regex spills("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
  static const std::regex stack("([0-9]+) bytes stack frame");
  static const std::regex smem("([0-9]+) bytes smem");
  std::map<std::string, KernelResources> out;
  std::istringstream in(log);
  KernelResources* current = nullptr;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, entry)) current = &out[m[1].str()];
    if (!current) continue;
    if (std::regex_search(line, m, regs)) current->registers = std::stoi(m[1].str());
    if (std::regex_search(line, m, spills)) current->spill_bytes = std::stoll(m[1].str()) + std::stoll(m[2].str());
    if (std::regex_search(line, m, stack)) current->stack_bytes = std::stoll(m[1].str());
    if (std::regex_search(line, m, smem)) current->shared_bytes = std::stoll(m[1].str());
  }
  return out;
}

}  // namespace loom::codegen
