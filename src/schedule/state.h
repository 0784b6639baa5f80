// Schedule states: immutable values describing how the anchor stage runs.
//
// A state tiles every axis of the anchor (see anchor.h) at each level of the
// target's memory hierarchy. On CPUs the levels are, outermost first:
//   0            parallel: tiles of the spatial axes handed to threads
//   1 .. L-2     one per private cache level (L2, then L1), all axes
//   L-1          register: the micro-kernel's accumulator block
// On GPUs they are block, virtual thread, thread and reduction step.
// Tiles form a divisibility chain: tile[l+1][a] divides tile[l][a], so only
// the last tile of a level can be partial (when the extent is not a
// multiple), and every micro-kernel index splits without division.
// Reduction axes are never split at level 0 (one tile, the extent rounded up
// to the level-1 tile where that leaves a partial block) and have register
// tile 1 unless they are the vector axis (lane-wise partial sums).
//
// Each level has a loop order. An access (input read) may be packed: copied
// into a contiguous buffer laid out in micro-kernel order at a pack point
// (level, position in that level's order), the cache_read of TVM. The
// element-wise consumer may be fused into the micro-kernel's write-back.
//
// States are values: structural equality and hash cover every field; the
// step list that produced a state is carried along for printing,
// serialization and replay, and is not part of its identity.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/hwspec.h"
#include "schedule/step.h"

namespace loom {

struct AnchorInfo;

// The steps that produced a state, newest first, shared with its ancestors:
// taking a step adds one node instead of copying the whole list.
struct StepTrail {
  Step step;
  std::shared_ptr<const StepTrail> previous;
};

// Storage for a state's tables, inline for the operators there are (4 levels
// x 8 axes; larger tables move to the heap): the traversal makes a state for
// every step it weighs, ten thousand per construction, so a state is one
// allocation, and no larger than it needs to be (its pages are touched anew
// when the heap was trimmed between constructions: about 4 us per page here).
template <typename T>
using StateStorage = boost::container::small_vector<T, 32>;

// Tile sizes, [level][axis], flat.
class TileTable {
 public:
  TileTable() = default;
  TileTable(int levels, int axes) : axes_(axes), data_(size_t(levels) * size_t(axes), 1) {}
  int64_t* operator[](int level) { return data_.data() + size_t(level) * size_t(axes_); }
  const int64_t* operator[](int level) const { return data_.data() + size_t(level) * size_t(axes_); }
  int levels() const { return axes_ ? int(data_.size() / size_t(axes_)) : 0; }
  std::vector<int64_t> row(int level) const { return {(*this)[level], (*this)[level] + axes_}; }
  bool operator==(const TileTable& o) const { return data_ == o.data_; }
  const StateStorage<int64_t>& flat() const { return data_; }

 private:
  int axes_ = 0;
  StateStorage<int64_t> data_;
};

// Loop orders, one list of axes per level, flat as well. Row views behave
// like small vectors of axis indices.
class OrderTable {
 public:
  template <typename T>
  struct Row {
    T* first;
    T* last;
    size_t size() const { return size_t(last - first); }
    T& operator[](size_t i) const { return first[i]; }
    T* begin() const { return first; }
    T* end() const { return last; }
    operator std::vector<int>() const { return {first, last}; }
  };
  OrderTable() = default;
  explicit OrderTable(int axes) : stride_(axes + 1) {}
  void add_level(const std::vector<int>& axes) {
    data_.push_back(int(axes.size()));
    data_.insert(data_.end(), axes.begin(), axes.end());
    data_.resize(data_.size() + size_t(stride_ - 1) - axes.size(), -1);
  }
  Row<int> operator[](int level) {
    int* row = data_.data() + size_t(level) * size_t(stride_);
    return {row + 1, row + 1 + row[0]};
  }
  Row<const int> operator[](int level) const {
    const int* row = data_.data() + size_t(level) * size_t(stride_);
    return {row + 1, row + 1 + row[0]};
  }
  bool operator==(const OrderTable& o) const { return data_ == o.data_; }
  const StateStorage<int>& flat() const { return data_; }

 private:
  int stride_ = 1;
  StateStorage<int> data_;
};

struct StateData {
  TargetKind target = TargetKind::Cpu;
  int num_axes = 0;
  int num_spatial = 0;
  TileTable tile;                          // [level][axis]
  OrderTable order;                        // [level]: axes in loop order, outermost first
  int vec_axis = -1;                       // -1: scalar micro-kernel
  int vec_width = 1;
  // Unroll factor of the innermost reduction loop. A loop of at most
  // kWholeUnrollTrips taps (a constant count) is unrolled whole whatever
  // the factor: its copies share a sliding window's loads (lowering and the
  // model both rely on this).
  static constexpr int kWholeUnrollTrips = 4;
  // Copies of a micro-kernel's tap loops lowering unrolls at most so that
  // each element's padding test folds (lowering and the model both rely on
  // this).
  static constexpr int64_t kMaxUnrolledTapCopies = 16;
  // Copies of the micro-kernel lowering makes at most for peeled tiles
  // (remainders, border tiles) before running them in loops instead: the
  // model estimates which it peels.
  static constexpr int kMaxMicroKernelCopies = 16;
  int unroll = 1;
  boost::container::small_vector<int, 4> pack;  // per access: pack point, or -1
  bool fuse = false;                       // consumer computed in the write-back
  static constexpr int kMaxMaterialized = 32;  // accesses `materialize` has a bit for
  uint32_t materialize = 0;                // per access, a bit: its guarded producer is materialized
  std::shared_ptr<const StepTrail> trail;  // how this state was reached (not identity)

  int levels() const { return tile.levels(); }
  int reg_level() const { return levels() - 1; }
  int pack_level(int point) const { return point / (num_axes + 1); }
  int pack_position(int point) const { return point % (num_axes + 1); }
  int make_pack_point(int level, int position) const { return level * (num_axes + 1) + position; }
  // Whether the loop over `axis` at a pack point's level opens above it (the
  // pack then copies one tile of that loop, else the whole parent tile).
  bool pack_opens_loop(int point, int axis) const;
  // Whether a pack of the access copies a halo tile in the tensor's own
  // coordinates, each element once, rather than a layout per plan axis (a
  // window's input packed per axis repeats each element once per tap that
  // reads it, im2col-style). It must read a window through affine indices,
  // and the vector must move it along its last dimension alone, by one: a
  // depthwise convolution's input, read a vector of channels at a time from
  // the copy. An input the micro-kernel broadcasts (a convolution's, the
  // vector along its output channels) keeps the layout per plan axis, which
  // holds a register tile's elements of one step in one run.
  bool packs_halo(const AnchorInfo& anchor, size_t access) const;
  bool materialized(size_t access) const { return access < kMaxMaterialized && (materialize >> access & 1u); }
  // Whether the anchor's access reads through a guard (a padded input) in
  // this state: guarded, and its producer not materialized.
  bool reads_through_guard(const AnchorInfo& anchor, size_t access) const;
  // Whether lowering peels, at level `level`, the last tile along `axis`
  // when a known size leaves it shorter (one more copy of the micro-kernel,
  // of a size known when compiling): along a reduction axis at the cache
  // levels, so that the micro-kernel's reduction loop keeps a constant trip
  // count; along a spatial axis at every level below the parallel one (the
  // vector axis at that one too), so that every register tile has a known
  // size and keeps its accumulators in registers (GEMM 49 x 2048 x 512 in row
  // tiles of 18, then 6, ran its last row as a loop bounded at run time with
  // the accumulators in memory: 1.77 ms, 1.45 with that row peeled, Zen 3).
  // lower/cpu/tiled_nest.cc peels; the model counts the copies.
  bool peels_remainder_at(const AnchorInfo& anchor, int level, int axis) const;
  // Whether level `level`'s loop over `axis` runs once whatever the sizes at
  // run time: its tile covers the parent tile, or at level 0 (and for a
  // reduction axis at level 1, whose parent is the whole axis) a constant
  // extent. Where such a loop stands in its level's order changes nothing.
  bool loop_runs_once(const AnchorInfo& anchor, int level, int axis) const;
  // The steps from the initial state, oldest first.
  std::vector<Step> history() const;

  bool operator==(const StateData& o) const;
  size_t hash() const;
  std::string str() const;  // the fields, readable
};

using State = std::shared_ptr<const StateData>;

// The state every construction starts from: no tiling below the full
// extent, no parallel split, scalar, nothing packed or fused.
State initial_state(const AnchorInfo& anchor, const HwSpec& target);

// Applies `steps` to the initial state; the first illegal step is reported
// as a UserError naming it and the reason.
State replay(const AnchorInfo& anchor, const HwSpec& target, const std::vector<Step>& steps);

// The step list as text, one step per line, and back.
std::string serialize_steps(const std::vector<Step>& steps);
std::vector<Step> parse_steps(const std::string& text);

// The innermost reduction loop of the micro-kernel, which LLVM unrolls
// (wholly when it is a few taps long, else by the state's factor), and
// into how many copies: lowering builds it so, and the model counts it.
// `axis` is -1 when no reduction loop runs there. `whole`: the copies are
// the whole loop, a constant number of taps (the tile divides the axis), so
// their loads sit in one block.
struct UnrolledReduction {
  int axis = -1;
  int64_t copies = 1;
  bool whole = false;
};
UnrolledReduction unrolled_reduction(const StateData& s, const AnchorInfo& an);

// How many copies of its accumulators a register block of
// `accumulator_vectors` vectors cycles through along the unrolled reduction
// loop (step k into copy k mod copies, the copies summed at the end): a
// block with fewer vectors than the core keeps FMAs in flight
// (`fma_chains`: the FMA latency times the FMA units) waits on each FMA's
// latency, and a remainder's last row has few (a GEMM's 37th row in tiles
// of 6x16 on Zen 3: 2 vectors, against 8 FMAs in flight). As many copies as
// fill the chains, fewer where they and the block's operands would outgrow
// the `vector_registers`; 1 where the loop is unrolled whole (a window's
// taps), where the vector runs along a reduction axis, or where the anchor
// reads through a padding guard (its steps test per element). Lowering builds the copies (lower/cpu/tiled_nest.cc)
// and the model counts them (construct/analytic_model.cc, block_rate).
int64_t accumulator_copies(const StateData& s, const AnchorInfo& an, int64_t accumulator_vectors, int fma_chains,
                           int vector_registers);

// Trips of the micro-kernel's loop over reduction axis `r` in one call: the
// innermost cache tile's size, cut to the axis (the loop runs to the axis's
// end, whatever its tile's size).
int64_t call_trips(const StateData& s, const AnchorInfo& an, int r);

// The register tiles at the two ends of a run of `size` positions of
// spatial axis `axis` from `base` that reach its padding (a shorter last
// tile counts as one). Lowering peels them where their positions are known
// at compile time (lower/cpu/tiled_nest.cc), and their guards fold where
// the taps sliding along the axis are the micro-kernel's loop unrolled
// whole (the model's charge for them: construct/analytic_model.cc,
// border_tiles_out_of_loop). Nullopt where the axis has no
// tabulated padding, its taps are not unrolled whole, no tile reaches the
// padding, or more than kMaxBorderTiles do.
struct BorderTiles {
  int64_t lead = 0, trail = 0;
};
constexpr int64_t kMaxBorderTiles = 4;  // both ends together
std::optional<BorderTiles> border_tiles(const StateData& s, const AnchorInfo& an, int axis, int64_t base,
                                        int64_t size);

// Names of the tiling levels for printing ("parallel", "L2", "L1", "reg").
std::vector<std::string> level_names(const HwSpec& target);

}  // namespace loom
