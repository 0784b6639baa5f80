// Lowering: an operator plus a schedule becomes one loop-nest function.
//
// Steps, in order: give every placeholder, output and materialized stage a
// flat buffer; inline the stages the schedule marks inline (substituting their
// bodies at each read); turn every remaining tensor read into a flat Load;
// build each materialized stage's code; wrap intermediate buffers in
// Allocate. CPU lowering (lower/cpu) builds loop nests with a parallel outer
// loop, vectorized inner loops and the anchor's tiled nest; GPU lowering
// (lower/gpu) builds one kernel launch per materialized stage. What they
// share (buffers, inlining, fused epilogues) is in stage_reads.h.
#pragma once

#include "loom/operator.h"
#include "lower/loop_ir.h"
#include "schedule/schedule.h"

namespace loom {

// Changes when lowering or code generation changes the code a schedule
// compiles to (2: micro-kernels prefetch operands read with gaps; 3: and the
// next pack region's source of an operand larger than L2; 4: register tiles
// reaching the padding are peeled; 5: materialized rows a line further
// apart, and operands read with gaps hinted on every first pass, into L2
// further ahead too): cached kernels are keyed on it, so a cache written
// before is not served after.
constexpr int kLoweringRevision = 5;

// By the schedule's target kind.
LoweredFunc lower(const Operator& op, const Schedule& schedule);

LoweredFunc lower_cpu(const Operator& op, const Schedule& schedule);
LoweredFunc lower_gpu(const Operator& op, const Schedule& schedule);

}  // namespace loom
