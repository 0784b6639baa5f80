#include "codegen/backend.h"

#include "loom/error.h"


namespace loom::codegen {

double CompiledFunction::time_on_device(void* const*, const int64_t*, int) const {
  throw UserError("device timing is for GPU kernels on a CUDA device");
}

std::unique_ptr<Backend> make_backend(const HwSpec& target) {
  return target.kind == TargetKind::Cpu ? make_cpu_backend(target.cpu) : make_gpu_backend(target.gpu);
}

}  // namespace loom::codegen
