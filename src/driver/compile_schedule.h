// Compiling one given schedule into a Kernel: the step compile(), tune()
// and the tests that check arbitrary schedule states all end in.
#pragma once

#include "loom/compile.h"
#include "schedule/schedule.h"

namespace loom {

Kernel compile_schedule(const Operator& op, const Schedule& schedule, const HwSpec& target, int threads);

// The report of a kernel being assembled by the driver.
CompileReport& mutable_report(Kernel& kernel);

}  // namespace loom
