// Lowering of the anchor stage under a schedule state (see schedule/state.h).
//
// The nest, outermost first:
//   1. one parallel loop over the level-0 tiles of the spatial axes;
//   2. per cache level, loops over sub-tiles in that level's order, with
//      each packed access copied into its buffer at its pack point;
//   3. loops over register tiles;
//   4. the micro-kernel: a stack accumulator block (promoted to registers)
//      initialised with the reduction identity on the first reduction block
//      or the partial sums stored so far; the reduction loops; inside them
//      fully unrolled loops over the register tile with the vector axis
//      innermost (outer-product form: one operand broadcast, the other
//      loaded as vectors, FMA into the block); then the write-back, through
//      the fused consumer on the last reduction block.
// Where a known extent leaves a shorter last tile, that tile is peeled and
// keeps the unrolled micro-kernel at its constant size: along the vector
// axis at every level (88 channels run as 5 vectors of 16 and one of 8, not
// 80 + 8 scalar steps; 87 as 5 and one masked vector of 7 lanes), along the
// other spatial axes at the register tiles (37 rows as 3 x 12 + 1), along
// reduction axes at the cache levels (K = 771 in blocks of 32: 24 blocks,
// then one of 3). A tile cut short at run time (a symbolic extent,
// an enclosing tile that does not divide) runs the same micro-kernel with
// runtime-bounded loops instead of unrolled ones. Reads guarded by a select
// (padding) are proven safe by interval arithmetic on their affine
// conditions, over the whole register tile and again per reduction step;
// where the proof holds the guard is dropped (the interior), elsewhere it
// stays (border tiles, where codegen blends clamped speculative loads).
// Along an axis whose taps the micro-kernel unrolls whole, the border tiles
// are peeled out of the loop over the register tiles where its start is
// known: their tests then fold, and the tiles between run unguarded, proven
// over the loop's range.
// Where the padded data comes from a buffer that holds the padding (packed
// or materialized), the steps that read only padding are skipped: per
// element where the tile's position is fixed at compile time, per tap for a
// whole tile elsewhere.
// An operand read in place whose rows the reduction steps through with gaps
// between them (a GEMM's B, N floats apart, 48 of them read per step) is
// prefetched a few steps ahead: hardware prefetchers follow sequential runs
// within a page, not short runs kilobytes apart, and such a kernel waited on
// every row (matmul 7x771x771's 7x48 tiles, B in L3: 0.097 ms without hints,
// 0.062 with them 8 rows ahead, on an AVX-512 Xeon). Runs too short for any
// prefetcher to follow are also asked of L2 far enough ahead to cover a
// miss to memory (TiledNest::l2_rows).
// A packed operand that does not stay in L2 between calls is copied from
// farther out, in the same short runs far apart, and each pack waited on
// its lines: the first pass of the micro-kernels over one pack region asks
// L2 for the next region's source, a reduction step's run per step (a 1x1
// convolution's 4 MB of weights, packed 256 x 32 at a time: 0.74-0.78 ms
// per call without, 0.62-0.67 with them).
#pragma once

#include <functional>

#include "lower/loop_ir.h"
#include "schedule/anchor.h"
#include "schedule/schedule.h"
#include "schedule/state.h"

namespace loom {

struct TiledNestInputs {
  const AnchorInfo* anchor = nullptr;
  const StateData* state = nullptr;
  CpuCaches caches;  // line, L1 geometry and prefetch limits
  // Lowers the reads left in an expression (inlining or flat loads).
  std::function<Expr(const Expr&)> lower_reads;
  BufferRef out;           // the anchor's buffer; the fused consumer's output when fused
  // The fused consumer's value given the anchor's value at `coords`; empty
  // when nothing is fused.
  std::function<Expr(const Expr& value, const std::vector<Expr>& coords)> epilogue;
};

Stmt lower_tiled_nest(const TiledNestInputs& in);

}  // namespace loom
