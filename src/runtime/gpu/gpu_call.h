// One call of a GPU function, as the runtimes that execute it (CUDA driver,
// OpenCL runner) see it: buffers with their host copies, size values, and
// the kernel launches in order. Every kernel takes every buffer, then every size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

struct GpuCallBuffer {
  void* host = nullptr;  // uploaded from / downloaded into; null: device-only (a temporary)
  uint64_t bytes = 0;
  bool download = false;
};

struct GpuCallLaunch {
  std::string kernel;
  uint64_t grid = 0;  // blocks
  uint32_t threads = 1;
};

struct GpuCall {
  std::vector<GpuCallBuffer> buffers;
  std::vector<int64_t> sizes;
  std::vector<GpuCallLaunch> launches;
};

}  // namespace loom
