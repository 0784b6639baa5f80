// Libraries opened at run time (the CUDA driver, NVRTC, cuBLAS/cuDNN in
// benchmarks): loom builds and runs where they are absent.
#pragma once

#include <dlfcn.h>

namespace loom {

// `fn` = the symbol `name` of `lib` (null when `lib` is null or lacks it); true when found.
template <typename F>
bool bind_symbol(void* lib, const char* name, F& fn) {
  fn = lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
  return fn != nullptr;
}

}  // namespace loom
