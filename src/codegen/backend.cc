#include "codegen/backend.h"

#include "loom/error.h"

namespace loom::codegen {

std::unique_ptr<Backend> make_backend(const HwSpec& target) {
  if (target.kind == TargetKind::Cpu) return make_cpu_backend(target.cpu);
  throw UserError("hwspec '" + target.name +
                  "' describes a GPU, and this build has no GPU code generator yet; use a CPU hwspec");
}

}  // namespace loom::codegen
