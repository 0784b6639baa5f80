// The GPU reading of a state's tile table (see state.h), shared by legality
// checks, the GPU model and GPU lowering.
//
// Levels: 0 block, 1 virtual thread, 2 thread. Along a spatial axis a block
// covers block[a] elements in vthreads[a] = block/tile[1] strips; each strip
// is dealt to threads_along[a] = tile[1]/tile[2] threads, thread_tile[a] =
// tile[2] consecutive elements each. A thread so computes vthreads x
// thread_tile elements per axis, strips tile[1] apart: neighbouring threads
// touch neighbouring data in every strip (coalesced), and the strips are
// independent accumulators (Gensor's virtual threads). Along a reduction
// axis, tile[1] is the reduction step: the slice of the reduction staged in
// shared memory at a time. An access whose pack entry is set is staged: each
// reduction step the block's threads copy the part of it the block reads
// into shared memory (cache_read), laid out by the axes it uses in the
// tensor's memory order.
#pragma once

#include <cstdint>
#include <vector>

namespace loom {

struct StateData;
struct AnchorInfo;

struct GpuTiles {
  std::vector<int64_t> block, vthreads, threads_along, thread_tile, step;  // per axis
  int64_t threads = 1;     // per block
  int64_t per_thread = 1;  // output elements (accumulators) per thread

  static GpuTiles of(const StateData& state, const AnchorInfo& anchor);

  // The axes access `i` uses, largest memory stride first, and its shared
  // tile's extent along each (the block tile, or the reduction step).
  std::vector<int> staged_axes(const AnchorInfo& anchor, int i) const;
  std::vector<int64_t> staged_extents(const AnchorInfo& anchor, int i) const;
  // The same extents with the innermost padded by one element when it is a
  // multiple of the bank count (rows of a 2-D tile then start in different banks).
  std::vector<int64_t> staged_layout(const AnchorInfo& anchor, int i, int banks) const;
  // Bytes of shared memory all staged accesses take (4-byte elements).
  int64_t shared_bytes(const StateData& state, const AnchorInfo& anchor, int banks) const;
};

}  // namespace loom
