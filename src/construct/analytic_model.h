// The analytic hardware model: predicted run time of a schedule state.
//
// Everything comes from the hwspec and the anchor's access analysis; nothing
// is measured. For a state with tiles T[l][a] over plan extents E[a]:
//
// Compute. flops / (cores_used * peak_per_core * vector_util * ilp * issue):
//   vector_util = E_v / (ceil(E_v / W) * W) on the vector axis, 1/lanes if
//                 scalar, divided by W for an unpacked access that must be
//                 gathered (stride not 0 or 1 along the vector axis);
//   ilp         = min(1, accumulators / (fma_latency * fma_units));
//   ilp * issue = FMA cycles / max(FMA cycles, load cycles, fma_latency) per
//                 reduction step of the micro-kernel (vector loads at the
//                 hwspec's L1 load bandwidth, scalar loads on two ports,
//                 broadcasts at the spec's measured broadcast_fma_cycles, a
//                 gathered vector one element per cycle; an unpacked access
//                 sliding along the register tile (not its vector axis)
//                 over the innermost reduction loop, when that loop is
//                 unrolled whole, loads the union of its taps' data tiles
//                 once for all taps);
//   each kind of register block lowering emits (the register tile, and the
//   remainders it peels along statically sized axes, with fewer
//   accumulators) computes its share of the points at its own ilp * issue.
// Traffic. Per granularity g (a micro-kernel call, each cache tile, the
// parallel tile) and access X:
//   bytes_g(X)  = 4 * D_X(T_g) * calls_g / reuse_g(X),
//   D_X         = data tile: prod over X's dims of sum_a |c_da| (T_a - 1) + 1,
//   calls_g     = prod_a ceil(E_a / T_g[a]),
//   reuse_g(X)  = product of the trip counts of the innermost enclosing loops
//                 whose axes X does not use (its tile stays resident);
//   the output counts twice (read and write) per reduction block. Each cache
//   (L1, L2, a core's share of L3) pays, at the bandwidth filling it (the
//   measured streaming one; for the share of bytes prefetchers cannot
//   cover, the measured scattered one):
//   nothing when the whole problem fits in 3/4 of it (kernels run
//   repeatedly, data stays hot); else the traffic of the outermost g whose
//   footprint fits; else, when none fits, every micro-kernel call's whole
//   working set (no reuse). An access whose rows, a power of two apart,
//   fill every way of the L2 or L3 sets they map to fits only the blocks
//   inside where they do not. In L2 and out, an unpacked access's run
//   shorter than its row also holds the next ~512 bytes of the row, which
//   stream prefetchers bring. Unpacked accesses whose contiguous run is
//   shorter than a cache line pay for whole lines.
// Streams. Prefetchers follow a run of lines after its first ~512 bytes,
//   within a page, and track a few (16) runs at once. An access's streams
//   are its micro-kernel data tile cut at page boundaries (the contiguous
//   axis, then the next-strided axes while they stay within a page); when
//   there are at most 16, each enclosing loop stepping along their axes
//   lengthens them. The first 512 bytes of every stream (all of a shorter
//   one) are demand misses, charged at the scattered bandwidth; an input's,
//   unless a stride prefetcher follows its loads, stall the core when they
//   come from a shared cache or memory. A packed access is read row by row
//   of its packed region.
// Packing. Each packed access moves its region twice per pack at the read
// bandwidth of the level it comes from (its source read in the region's rows,
// with their demand misses), plus the scalar copy: four elements a cycle,
// one when each element tests the padding.
// Bandwidths are the spec's measured read bandwidths per level (a detected
// host always has them); a spec without them gets 64 bytes per cycle from
// L1, halving per level outward.
// Penalties (cycles at the hwspec frequency). Partial register tiles run a
// generic path ~4x slower; an
// unpacked guarded read (padding) costs a branch per element in register
// tiles on the border of a windowed axis (interior tiles run unguarded); each
// micro-kernel call costs ~20 cycles plus a load and a store per
// accumulator; an output gathered or scattered along the vector axis, L1
// set conflicts of strided unpacked reads within a register tile and the
// horizontal sums of a vectorized reduction are charged per element; an
// unpacked read whose lines along the micro-kernel's reduction loop crowd
// more L1 sets than there are ways re-reads every step's lines from L2, and
// where the spec measured how slowly such a stream over a few sets refills
// L1 (set_stream_cycles), each kind of register block waits for what its
// FMAs do not hide, on the passes that no prefetch hint covers. An
// element-wise consumer not fused into the write-back runs as a pass of its
// own, reading the result back and writing its own at the bandwidth of the
// level both fit in.
// Spills. Accumulators plus live operands (the fewest vectors one access
// needs per step, plus one; that times the unrolled taps when an access
// slides over them; for a vector access sliding over taps unrolled whole,
// one vector column's window plus one instead) beyond the register file
// cost a store and a reload per spilled register per reduction step.
// Parallelism. Level-0 tiles are dealt to threads in contiguous chunks of
// equal counts; balance is all tiles' points over threads times the
// busiest chunk's (a partial last tile along an axis holds fewer).
// Time = (softmax(compute, traffic per cache) + packing + penalties) / (threads
// * balance), softmax being the 6-norm: a roofline with imperfect overlap,
// plus overheads that do not overlap.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "loom/hwspec.h"
#include "schedule/anchor.h"
#include "schedule/state.h"

namespace loom {

struct Estimate {
  double seconds = 0;          // predicted time
  double compute_s = 0;        // at the achievable FMA rate
  // Traffic time into each cache, L1 first (only the first `caches` used).
  std::array<double, 4> level_s{};
  // The part of each level's traffic time that stalls the core rather than
  // overlapping compute: demand misses from far away.
  std::array<double, 4> stall_s{};
  int caches = 0;
  // The objectives the state graph weighs: compute, traffic per cache,
  // packing + penalties, and the time lost to parallel imbalance.
  int num_objectives() const { return caches + 3; }
  double objective(int k) const;
  double pack_s = 0;
  double penalty_s = 0;
  double balance = 1;          // parallel load balance in (0, 1]
  double vector_util = 1;      // useful fraction of vector lanes
  double ilp = 1;              // latency hiding by independent accumulators
  std::string str() const;
};

Estimate estimate(const AnchorInfo& anchor, const StateData& state, const HwSpec& target, int threads);

// Whether lowering peels the remainders of known size of a CPU state's
// tiles (lower/cpu/tiled_nest.cc): past its bound on copies of the
// micro-kernel (StateData::kMaxMicroKernelCopies) it cuts every tile at run
// time instead, and the model charges their slower bodies.
bool peels_known_remainders(const StateData& state, const AnchorInfo& anchor);

}  // namespace loom
