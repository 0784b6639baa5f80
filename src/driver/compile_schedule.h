// Compiling one given schedule: the step every strategy ends in, exposed for
// tests that check arbitrary schedule states.
#pragma once

#include "loom/compile.h"
#include "schedule/schedule.h"

namespace loom {

Kernel compile_schedule(const Operator& op, const Schedule& schedule, const HwSpec& target, int threads);

}  // namespace loom
