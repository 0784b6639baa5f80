// Lowering: an operator plus a schedule becomes one loop-nest function.
//
// Steps, in order: give every placeholder, output and materialized stage a
// flat buffer; inline the stages the schedule marks inline (substituting their
// bodies at each read); turn every remaining tensor read into a flat Load;
// build each materialized stage's loop nest (fused parallel outer loop,
// serial loops, vectorized innermost loop, reduction loops inside with the
// accumulator in the output element); wrap intermediate buffers in Allocate.
#pragma once

#include "loom/operator.h"
#include "lower/loop_ir.h"
#include "schedule/schedule.h"

namespace loom {

LoweredFunc lower(const Operator& op, const Schedule& schedule);

}  // namespace loom
