// A compiled GPU function as a self-contained value: its source in both
// dialects (the CUBIN is built for the device present, on first use), and the host program (buffer
// sizes, launches and their grids) as integer programs over the size
// variables, so that it can be cached as bytes and run without the IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/loop_ir.h"

namespace loom::codegen {

// An integer expression over the size variables in postfix form.
class SizeProgram {
 public:
  SizeProgram() = default;
  // UserError-free: internal error when `e` uses anything but integers, size variables and + - * / % min max.
  static SizeProgram of(const Expr& e, const std::vector<Var>& size_vars);
  int64_t eval(const int64_t* sizes) const;
  std::string text() const;
  static SizeProgram parse(const std::string& text);

 private:
  std::vector<int64_t> code_;  // operands as (kind, value) pairs
};

struct GpuBufferPlan {
  std::string name;
  SizeProgram elements;
  int element_bytes = 4;
  bool is_arg = true;       // a function argument (else a global temporary)
  bool written = false;     // stored to by some kernel (copied back when an argument)
};

struct GpuLaunchPlan {
  std::string kernel;
  SizeProgram grid;
  int threads = 1;
};

struct GpuModule {
  std::string name;
  std::string cuda_source, opencl_source;
  std::vector<GpuBufferPlan> buffers;  // kernel parameter order
  int num_sizes = 0;
  std::vector<GpuLaunchPlan> launches;

  static GpuModule from(const LoweredFunc& func);
  std::string serialize() const;
  static GpuModule parse(const std::string& bytes);
};

}  // namespace loom::codegen
