// The GPU program of a lowered function as source text, in two dialects:
// CUDA C (compiled by NVRTC for NVIDIA GPUs: the product) and OpenCL C
// (run by any OpenCL implementation, PoCL on the CPU in tests: its
// executable twin). One printer: the dialects differ only in qualifiers,
// index builtins, barriers and math function names.
//
// Every kernel takes the same parameters, in order: the function's buffers
// (LoweredFunc::args), the global temporaries of the host program (heap
// Allocates around the launches, outermost first), then the size variables
// as 64-bit integers. Kernels are named by their launches.
//
// The OpenCL twin is bounds-checked, since it is what verifies kernels where
// no GPU is: every buffer access (global, shared or local) and every vector
// copy's alignment. Its kernels take one more buffer after the temporaries,
// an int that a faulting access sets to its buffer's number (see
// gpu_fault_buffer); CUDA C has neither.
#pragma once

#include <string>
#include <vector>

#include "lower/loop_ir.h"

namespace loom::codegen {

enum class GpuDialect { Cuda, OpenCL };

std::string print_gpu_source(const LoweredFunc& func, GpuDialect dialect);

// The name of the buffer numbered `id` in the fault table of a checked (OpenCL) source.
std::string gpu_fault_buffer(const std::string& opencl_source, int id);

// The global temporaries of a GPU function's host program, outermost first.
std::vector<BufferRef> gpu_temporaries(const LoweredFunc& func);
// Its launches, in order.
std::vector<const GpuLaunchNode*> gpu_launches(const LoweredFunc& func);

}  // namespace loom::codegen
