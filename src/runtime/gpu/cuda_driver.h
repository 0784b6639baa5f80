// The CUDA driver API, opened at run time (libcuda.so.1 comes with the
// NVIDIA driver, not the toolkit): loom builds and runs without it, and uses
// the first device when one is present.
#pragma once

#include <functional>
#include <string>

#include "runtime/gpu/gpu_call.h"

namespace loom {

// Whether libcuda opens, cuInit succeeds and a device exists; `why` says why not.
bool cuda_device_available(std::string* why = nullptr);

// The device's compute capability, "9.0".
std::string cuda_device_compute_capability();

// Loads `cubin` (once per content), copies the buffers in, runs the launches
// in order, copies the downloaded buffers back. Returns the device's name.
// With `kernel_ms`, the launch sequence runs about 100 ms more to warm the
// device up, then `repeats` times more, each between its own two events, and
// *kernel_ms is the median time of one sequence on the device (no copies):
// what benchmarks compare.
std::string run_cuda(const std::string& cubin, const GpuCall& call, int repeats = 0, double* kernel_ms = nullptr);

// For baselines that run on the same device (cuBLAS in benchmarks): device
// memory, and the median device time of `enqueue` over `repeats` runs, each
// between its own two events, after a warm-up as above. The primary context
// is made current.
unsigned long long cuda_alloc(size_t bytes);
void cuda_free(unsigned long long ptr);
double cuda_time_ms(const std::function<void()>& enqueue, int repeats);

}  // namespace loom
