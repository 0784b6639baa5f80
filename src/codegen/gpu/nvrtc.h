// NVRTC, opened at run time (libnvrtc from the CUDA Toolkit; nothing is
// linked at build time): CUDA C to CUBIN for a compute capability, with
// ptxas's resource report per kernel.
#pragma once

#include <map>
#include <string>

namespace loom::codegen {

struct KernelResources {
  int registers = -1;
  int64_t spill_bytes = 0;   // stores + loads
  int64_t shared_bytes = 0;  // static shared memory
  int64_t stack_bytes = 0;
};

struct NvrtcOutput {
  std::string cubin;
  std::string log;                                // NVRTC's and ptxas's messages
  std::map<std::string, KernelResources> kernels;  // by kernel name, from ptxas's report
  double compile_ms = 0;
};

// Whether libnvrtc can be opened; `why` says why not.
bool nvrtc_available(std::string* why = nullptr);

// "9.0" -> "sm_90". UserError on anything else.
std::string sm_arch(const std::string& compute_capability);

// Compiles `source` for `arch` (e.g. "sm_90"). InternalError with the log
// when it does not compile (generated code must); UserError when NVRTC is missing.
// NVRTC 12.9 and later serve a program compiled before from a cache, and
// ptxas then reports nothing: `need_report` compiles afresh, so that
// `kernels` holds every kernel (what reports and checks read), at the cost
// of the cache (what building a kernel wants).
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          bool need_report = false);

// ptxas -v's report, per kernel.
std::map<std::string, KernelResources> parse_ptxas_report(const std::string& log);

}  // namespace loom::codegen
