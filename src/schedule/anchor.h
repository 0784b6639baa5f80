// The anchor of an operator: the one stage a schedule state tiles.
//
// Construction works on one stage at a time: the operator's only reduction
// stage (matmul, convolution, pooling, row reductions), or its output stage
// when it has none or several (element-wise chains, softmax, layernorm).
// This file describes that stage's iteration space: its axes (spatial first,
// then reduction), their extents, every tensor read in its body with the
// axes that read depends on, and the element-wise consumer that may be fused
// into its write-back. States, the analytic model and lowering all read it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/expr_nodes.h"
#include "loom/operator.h"

namespace loom {

// One tensor read in the anchor's body, e.g. A[i, k] or X_pad[n, oh*2+rh, ...].
struct Access {
  Expr read;                          // the TensorRead in the anchor's body
  te::Tensor tensor;
  std::vector<Expr> indices;          // in terms of the anchor's axis variables
  std::vector<bool> uses_axis;        // per anchor axis
  // d(flat index)/d(axis) when affine with a constant coefficient.
  std::vector<std::optional<int64_t>> stride;
  // Extent of the data tile along each tensor dimension is approximated by
  // sum over axes |coeff(dim, axis)| * (tile(axis) - 1) + 1. Per dimension,
  // only the axes its index moves with (the model sums these for every
  // state it weighs: conv2d's input has 6 terms, not 4 x 7).
  struct Term {
    int axis;
    int64_t coeff;  // > 0; 1 where not affine
  };
  std::vector<std::vector<Term>> dim_terms;  // [dim]
  // The tensor's size along each dimension; empty when one is symbolic.
  std::vector<int64_t> const_shape;
  // The tensor's bytes at 4 an element; nullopt when a dimension is symbolic.
  std::optional<double> const_bytes() const {
    if (const_shape.empty()) return std::nullopt;
    double bytes = 4;
    for (int64_t d : const_shape) bytes *= double(d);
    return bytes;
  }
  bool guarded = false;  // reads through a select (padding): a branch per element unless packed
  // Per dimension of a guarded read, the extent of the tensor behind the
  // padding where the padded stage reads it at its own index plus a
  // constant (X_pad[h] = X[h - 1] inside): the rows the padding adds are not
  // in memory. Empty where unknown or unguarded.
  std::vector<int64_t> source_shape;
  // Every index is affine in the axes with constant coefficients of at
  // least zero (dim_terms then holds the coefficients themselves).
  bool affine = false;

  // The axis along which consecutive elements are adjacent in memory; -1
  // when none (the last such axis when several are).
  int contiguous_axis() const {
    int unit = -1;
    for (size_t a = 0; a < stride.size(); ++a)
      if (stride[a] == 1) unit = int(a);
    return unit;
  }

  // Whether some dimension's index moves with `axis` and with a reduction
  // axis (those from `first_reduce_axis` on), like oh*stride + rh.
  bool windowed(int axis, int first_reduce_axis) const {
    for (const auto& row : dim_terms) {
      bool spatial = false, reduce = false;
      for (const Term& t : row) {
        spatial |= t.axis == axis;
        reduce |= t.axis >= first_reduce_axis;
      }
      if (spatial && reduce) return true;
    }
    return false;
  }

  // Whether the access reads a window: some dimension's index moves with a
  // spatial axis and a reduction axis.
  bool reads_window(int first_reduce_axis) const {
    for (int a = 0; a < first_reduce_axis; ++a)
      if (windowed(a, first_reduce_axis)) return true;
    return false;
  }

  // Whether some dimension's index moves with both axes, like oh + kh:
  // stepping one and stepping the other back reads the same element.
  bool slides_with(int axis, int other) const {
    for (const auto& row : dim_terms) {
      bool first = false, second = false;
      for (const Term& t : row) {
        first |= t.axis == axis;
        second |= t.axis == other;
      }
      if (first && second) return true;
    }
    return false;
  }

  // Elements of the data tile along one tensor dimension (a row of dim_terms).
  static double dim_extent(const std::vector<Term>& row, const int64_t* tile) {
    double extent = 1;
    for (const Term& t : row) extent += double(t.coeff) * double(tile[t.axis] - 1);
    return extent;
  }

  // Elements of the data tile's last dimension, consecutive in memory: the
  // longest run it reads.
  double run_elems(const int64_t* tile) const { return dim_terms.empty() ? 1 : dim_extent(dim_terms.back(), tile); }

  // Elements of the data tile read for axis tile sizes `tile` (per axis).
  double data_tile(const int64_t* tile) const {
    double elems = 1;
    for (const auto& row : dim_terms) elems *= dim_extent(row, tile);
    return elems;
  }

  // Elements the tile touches, at most: per dimension its extent, or fewer
  // where a strided index skips some (oh*2 + kh with kh fixed reads every
  // other row of its extent): the loads of one step of a micro-kernel.
  double touched_tile(const int64_t* tile) const {
    double elems = 1;
    for (const auto& row : dim_terms) {
      double combinations = 1;
      for (const Term& t : row) combinations *= double(tile[t.axis]);
      elems *= std::min(dim_extent(row, tile), combinations);
    }
    return elems;
  }
};

// The same access to a copy of its tensor whose rows (last dimension) are
// `pitch` elements apart: its shape's last dimension and its strides as the
// copy lays them out (unchanged where the strides are not known affine).
Access with_row_pitch(const Access& x, int64_t pitch);

// One inequality of a source's padding: `value op 0`, with value an integer
// expression in the anchor's axes and op an ordering (<, <=, >, >=).
struct PaddingBound {
  Expr value;
  CompareOp op = CompareOp::GE;
};

// A spatial axis of constant extent whose window is bounded by padding
// along one tap axis of constant extent: per position, the taps
// [first, last] that read inside (first > last: none).
struct PaddedAxis {
  int axis = 0, tap = 0;
  std::vector<std::pair<int64_t, int64_t>> taps;
};

struct AnchorInfo {
  te::Tensor stage;
  std::vector<Var> axes;       // spatial axes, then reduction axes
  std::vector<Expr> extents;
  std::vector<int64_t> const_extent;  // -1 where symbolic
  std::vector<int64_t> planned;       // what symbolic axes are planned at (the task's sizes), 0: unset
  int num_spatial = 0;
  bool is_reduction = false;
  ReduceOp reduce_op = ReduceOp::Sum;
  Expr source;                 // the reduced (or computed) value, reads not yet lowered
  std::vector<Access> accesses;
  // The anchor's own writes as an access: its spatial axes, contiguous along
  // the last (strides unknown past a symbolic extent).
  Access output;
  // An element-wise consumer reading the anchor only at the same point.
  te::Tensor consumer;         // undefined when none
  Expr flops;                  // of the whole operator
  // Where the source combines something other than the reduction's
  // identity, seen through the padded stages' definitions (a
  // convolution's or a pool's padding), in the anchor's axes: the
  // condition's ordering comparisons, all of which hold there; empty where
  // every step may.
  std::vector<PaddingBound> padding;
  // Its bounds on single spatial axes, from the inequalities affine in one
  // spatial and one reduction axis with constant coefficients.
  std::vector<PaddedAxis> padded_axes;

  int num_axes() const { return int(axes.size()); }
  bool is_reduce_axis(int a) const { return a >= num_spatial; }
  // Whether reduction axis `a` steps over a window's taps: some access's
  // index moves with it and with a spatial axis (kh in oh * stride + kh).
  bool is_window_tap(int a) const {
    for (const Access& x : accesses)
      for (int s = 0; s < num_spatial; ++s)
        if (x.slides_with(s, a)) return true;
    return false;
  }
  // The extent to plan with: constant, or a planning guess for symbolic axes.
  int64_t plan_extent(int a) const {
    return const_extent[a] > 0 ? const_extent[a] : planned.empty() ? kDefaultPlanExtent : planned[a];
  }
  static constexpr int64_t kDefaultPlanExtent = 256;
};

// The reduction's source as `value` where `cond` holds and its identity
// elsewhere: a select whose other side is the identity (a padded read), or,
// for a sum, a product with such a factor (zero times a weight). A step
// whose condition fails then combines nothing and can be skipped.
std::optional<std::pair<Expr, Expr>> identity_unless(const Expr& source, ReduceOp op, const Expr& identity);

// Finds the anchor of `op` and analyses its accesses.
AnchorInfo analyze_anchor(const Operator& op);

}  // namespace loom
