// GPU lowering of the anchor stage under a schedule state (see
// schedule/gpu_tiles.h for how a state's tiles map onto blocks, virtual
// threads and threads).
//
// One launch: a block per block tile (grid = product of the block counts);
// its threads laid out over the spatial axes, the innermost fastest; each
// thread keeps its vthreads x thread_tile outputs in local accumulators
// (registers). Per reduction step: a barrier (the previous step's reads are
// done), every staged access copied into shared memory by all the block's
// threads together (elements outside the iteration space read as 0; four
// consecutive elements per vector load where the data is contiguous and
// aligned), a
// barrier, the step's reduction loop over the thread's outputs (staged reads
// from shared memory, the others straight from global memory). Then the write-back, through the fused
// element-wise consumer when there is one. Tiles the extents do not divide
// (and symbolic extents) are handled by guards on the outputs, the
// reduction and the staged copies.
#pragma once

#include <string>

#include "loom/hwspec.h"
#include "lower/loop_ir.h"
#include "lower/stage_reads.h"
#include "schedule/anchor.h"
#include "schedule/state.h"

namespace loom {

struct GpuTiledInputs {
  const AnchorInfo* anchor = nullptr;
  const StateData* state = nullptr;
  int banks = 32;  // of shared memory (padding of staged tiles)
  StageReads* reads = nullptr;
  BufferRef out;  // the anchor's buffer; the fused consumer's when fused
  StageReads::Epilogue epilogue;  // empty when nothing is fused
  std::string name;
};

Stmt lower_gpu_tiled_kernel(const GpuTiledInputs& in);

}  // namespace loom
