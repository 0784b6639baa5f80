// How each stage of an operator is executed.
//
// A stage is one compute tensor. A schedule decides, per stage, whether it
// is inlined into its consumers, how many of its leading axes are fused into
// the parallel loop, and which axis is vectorized at what width; the anchor
// stage (see anchor.h) may instead carry a schedule state (state.h), which
// lowering turns into a tiled nest, with its element-wise consumer fused
// into it when the state says so.
#pragma once

#include <string>
#include <vector>

#include "loom/hwspec.h"
#include "loom/operator.h"
#include "schedule/state.h"

namespace loom {

struct StageSchedule {
  te::Tensor tensor;
  State state;              // tiled by a schedule state (the anchor), or null
  bool fused = false;       // computed in the anchor's write-back
  bool inlined = false;     // computed inside its consumers, never stored
  // Elements from one row (last dimension) of its buffer to the next, where
  // not back to back (scratch_row_pitch); 0: back to back.
  int64_t row_pitch = 0;
  int parallel_axes = 0;    // leading axes fused into one parallel loop
  int vector_axis = -1;     // spatial axis vectorized, or -1
  int vector_width = 1;
  // Row fusion: a reduction's lanes over its innermost reduction axis, and
  // the independent vectors it keeps (hiding the combine's latency).
  int reduce_width = 1;
  int accumulators = 1;
};

// Hardware prefetchers follow a run of consecutive lines once they have
// seen its first this many bytes, and stop at a page boundary (the common
// behaviour of stream prefetchers, not one vendor's figure): the cost model
// charges a run's first bytes as demand misses, and micro-kernels ask L2 far
// ahead for runs shorter than this, which no prefetcher follows.
constexpr double kPrefetchLeadBytes = 512;

// What CPU lowering reads of the target's caches and core: how transposing
// copies are blocked, how micro-kernels prefetch and how many accumulators
// they keep, which the cost model counts too (default_schedule fills it
// from the spec).
struct CpuCaches {
  int line_bytes = 64;  // the L1 cache line
  int l1_sets = 64;     // L1's sets and ways (how far ahead micro-kernels prefetch)
  int l1_ways = 8;
  // Vector FMAs one core issues per nanosecond (the clock times the FMA
  // units); 0 where unmeasured. Sets how many reduction steps ahead
  // micro-kernels ask L2 for an operand (prefetch_hints.h).
  double vector_fmas_per_ns = 0;
  // The bytes L2 delivers per core in the time of one vector FMA (its
  // bandwidth over the FMA rate); 0 where unmeasured. A micro-kernel reading
  // an operand faster waits on L2 (prefetches on every pass).
  double l2_bytes_per_fma = 0;
  // L2's bytes one core can count on; 0 where unknown. Packs of an operand
  // larger than this prefetch the next pack's source into L2 (tiled_nest.h).
  int64_t l2_bytes = 0;
  // FMAs one core keeps in flight (the FMA latency times the FMA units) and
  // its vector registers: how many copies of a small register block's
  // accumulators micro-kernels cycle through (accumulator_copies, state.h).
  int fma_chains = 1;
  int vector_registers = 16;
};

struct Access;
struct AnchorInfo;
struct Task;

// The caches of a CPU spec as lowering reads them.
CpuCaches cpu_caches_of(const CpuSpec& cpu);

// How many of L1's sets blocks `lines_apart` cache lines apart, one after
// another, start in: fewer than all where the distance shares factors with
// their count (blocks 4 KB apart start in one set of a 64-set L1).
int64_t l1_sets_reached(int64_t lines_apart, const CpuCaches& caches);

struct Schedule {
  TargetKind target = TargetKind::Cpu;  // which lowering builds it
  int gpu_banks = 32;                   // GPU: shared-memory banks (padding of staged tiles)
  CpuCaches cpu_caches;                 // CPU: what lowering reads of the target's caches
  std::vector<StageSchedule> stages;  // compute tensors, producers first
  // Row fusion (row_fusion.h, CPU only): when row_axes > 0, every stage is computed
  // row by row inside one parallel loop over the leading row_axes axes,
  // rows_per_task rows per parallel task, each stage's row vectorized at
  // its vector_width; the stages' own parallel axes and states are unused.
  int row_axes = 0;
  int64_t rows_per_task = 1;
  // Row fusion: row r's phase p (row_phases in row_fusion.h) runs in iteration
  // r + p of the task's loop, so one iteration holds the phases of several
  // rows, independent of each other, and the core overlaps their latencies.
  bool row_pipelined = false;
  // The anchor analysis the state was made for, shared with its task so that
  // lowering does not repeat it; null when no stage carries a state.
  std::shared_ptr<const AnchorInfo> anchor;
  // The operator the stages belong to, when it is not the one lowered: a
  // task's collapsed operator (collapse_axes.h), over the same buffers.
  std::shared_ptr<const Operator> op;
  std::string str() const;
};

// The vector width an element-wise stage runs at along its innermost axis
// of `extent`: the target's lanes, or the largest power of two >= 4 a short
// axis fills, else scalar.
int vector_width_for(const Expr& extent, int lanes);

// Elements from one row (the last dimension) of a buffer the kernel
// allocates for itself, a materialized producer's, to the next: the row's
// own, and one cache line more where rows a multiple of many lines long
// would start in few L1 sets (at most half as many as it has ways), as a
// 1024-channel image's pixels, 4 KB apart, all start in one: a window
// reading a few pixels then thrashes that set. With a line more, the rows
// start in every set in turn (measured: depthwise 7x7 3x3 over 1024
// channels, its input materialized, in tiles of a row of 7 pixels by 32
// channels, 37-39 us with pixels 4 KB apart, 14-17 a line further apart; a
// 3x3 convolution over 14x14x256, tiles of 14 rows by 32 channels, 2.4-2.7
// ms and 1.9-2.0).
int64_t scratch_row_pitch(int64_t row_elems, int elem_bytes, const CpuCaches& caches);
// The row pitch of the buffer a state's Materialize step computes access
// `x`'s producer into (StageSchedule::row_pitch): 0 where back to back.
int64_t materialized_row_pitch(const Access& x, const CpuCaches& caches);

// Every compute tensor reachable from the outputs, producers first.
std::vector<te::Tensor> compute_stages(const Operator& op);

// The simple schedule: inline cheap element-wise producers, parallelise the
// fused outer axes, vectorize the innermost axis at the target's width.
Schedule default_schedule(const Operator& op, const HwSpec& target);

// The default schedule with the anchor stage (see anchor.h) run under
// `state`, and its consumer fused when the state says so.
Schedule schedule_with_state(const Task& task, const State& state);

}  // namespace loom
