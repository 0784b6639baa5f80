// The GPU analytic model: Roller's micro performance model over a state's
// block, virtual-thread and thread tiles (schedule/gpu_tiles.h). Every
// hardware number comes from the spec's gpu section.
//
// Occupancy. Blocks per SM = min(max_blocks_per_sm, threads, registers
//   (the register estimate x threads, per warp), shared memory); none is an
//   unrunnable state. Waves = ceil(blocks / (SMs x blocks per SM)); the last
//   wave's idle SMs are the wave-quantization loss (balance).
// Compute. flops / (peak x balance x latency hiding x issue): latency hiding
//   = active warps x independent accumulators per thread over the 32 warp
//   instructions an SM keeps in flight; issue = FMAs over FMAs + operand
//   loads per reduction position (shared or global loads take issue slots).
// Shared memory. Operand loads from staged tiles, 4 bytes each, at banks x 4
//   bytes per cycle per SM, times the bank-conflict degree: gcd(stride,
//   banks) for neighbouring threads of a warp reading words `stride` apart
//   (1 when the access does not vary along the fastest thread axis: a broadcast).
// Global memory. Each block reads its staged tiles once per reduction step
//   (data tile of the block x the step, summed over steps), the unstaged
//   accesses per thread, and writes its outputs; a read whose fastest
//   element does not have unit stride moves whole 32-byte sectors. That
//   traffic crosses L2 (l2_bandwidth_gbs, else 3x DRAM); DRAM moves the
//   tensors once when they fit in L2, the L2 traffic otherwise.
// Time = 6-norm soft maximum of compute, shared, L2 and DRAM time, plus a
//   launch (~3 us).
#pragma once

#include "construct/analytic_model.h"

namespace loom {

Estimate estimate_gpu(const AnchorInfo& anchor, const StateData& state, const HwSpec& target);

}  // namespace loom
