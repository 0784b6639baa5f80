// Prefetch hints a CPU micro-kernel issues for an operand it reads in place
// with gaps between rows, and how far ahead they reach. One definition for
// the two that need it: lowering emits the hints (lower/cpu/tiled_nest.cc),
// and the cost model counts the passes over the operand whose misses they
// cover (construct/analytic_model.cc), so that a state is charged for the
// hints it gets.
#pragma once

#include <cstdint>
#include <optional>

#include "schedule/schedule.h"

namespace loom {

// How many reduction steps ahead one operand's hints reach.
struct HintReach {
  // Into L1: a few rows, bounded by L1's sets and ways (prefetch_rows); 0
  // where the reduction loop is too short to hint at all.
  int64_t l1_rows = 0;
  // Into L2, far enough to cover a miss to memory; 0: none.
  int64_t l2_rows = 0;
  // The micro-kernel reads the operand faster than L2 delivers it, so every
  // pass over it is hinted; otherwise only the first is.
  bool every_pass = false;
};

// Whether state `s`'s micro-kernel reads access `x` in one run along the
// vector axis a step: the vector axis spatial and the access's contiguous
// one, no other axis of the register tile moving the access. Hints ask for
// such runs (of the access in place, or of a packed one's next region).
bool reads_vector_runs(const StateData& s, const AnchorInfo& an, const Access& x);

// Whether packed access `access` of `s`, an operand of `operand_bytes`, is
// one whose next pack region's source micro-kernels ask L2 for while they
// read the current region: the operand outgrows L2 (`l2_bytes`; 0: unknown,
// never), two regions of `region_elems` fit in half of it, it is not packed
// as a halo tile, and the micro-kernel reads it in vector runs. Lowering
// emits those hints (lower/cpu/tiled_nest.cc, which also needs loops around
// the pack and the hinted loop to move the access); the model hides the
// reads they move ahead (construct/analytic_model.cc).
bool hints_next_pack_region(const StateData& s, const AnchorInfo& an, size_t access, double operand_bytes,
                            double region_elems, int64_t l2_bytes);

// The stride, along reduction axis `axis`, of access `x` where state `s`'s
// micro-kernel reads it in place in runs of `run` elements along the vector
// axis with gaps between them (reads_vector_runs, unguarded, the stride at
// least a line, `line_elems`, and longer than the run). nullopt otherwise.
// (Whether the access is packed is the caller's to ask.)
std::optional<int64_t> gapped_row_stride(const StateData& s, const AnchorInfo& an, const Access& x, int axis,
                                         int64_t run, int64_t line_elems);

// The vector FMAs of one reduction step of `s`'s register tile, whose runs
// along the vector axis are `run` elements.
int64_t step_vector_fmas(const StateData& s, int64_t run);

// The reach of the hints for rows `stride` elements apart, of which each
// step, `step_fmas` vector FMAs, reads `run` elements, over a reduction loop
// of `trips` steps.
HintReach hint_reach(int64_t stride, int64_t run, int64_t step_fmas, int64_t trips, const CpuCaches& caches);

// How many reduction steps ahead a micro-kernel prefetches into L1 an
// operand whose rows are `stride` elements apart and of which it reads `run`
// per step (`line` elements a cache line): as many rows as keep the lines
// asked for ahead within half of one L1 way in all (they wait in the core's
// few fill buffers and must not push out the lines in use), and within half
// of its ways in any one set (rows a multiple of a way's bytes apart all
// fall in the same sets: 16 rows ahead doubled the time of a 6x64 tile over
// a B whose rows are 16 KiB apart). At least 1.
int64_t prefetch_rows(int64_t stride, int64_t run, int64_t line, int64_t l1_sets, int64_t l1_ways);

}  // namespace loom
