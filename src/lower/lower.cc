#include "lower/lower.h"

#include "loom/error.h"

namespace loom {

LoweredFunc lower(const Operator& op, const Schedule& schedule) {
  const Operator& scheduled = schedule.op ? *schedule.op : op;
  LOOM_INTERNAL_CHECK(scheduled.inputs.size() == op.inputs.size() && scheduled.outputs.size() == op.outputs.size() &&
                          scheduled.size_vars.size() == op.size_vars.size(),
                      "schedule of another operator than ", op.name);
  return schedule.target == TargetKind::Gpu ? lower_gpu(scheduled, schedule) : lower_cpu(scheduled, schedule);
}

}  // namespace loom
