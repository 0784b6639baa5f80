#include "lower/lower.h"

namespace loom {

LoweredFunc lower(const Operator& op, const Schedule& schedule) {
  return schedule.target == TargetKind::Gpu ? lower_gpu(op, schedule) : lower_cpu(op, schedule);
}

}  // namespace loom
