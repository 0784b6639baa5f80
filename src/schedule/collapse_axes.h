// An operator's loop nest in its fewest axes: what states tile and lowering builds.
//
// A 1x1 convolution over a 7x7 image is a GEMM with 49 rows, but tiled over
// separate 7-pixel rows and columns every register tile of 2x3 or 4x2 pixels
// covers 72 pixels to compute 49. Two adjacent output axes merge into one when
// every tensor the operator reads or writes indexes them as one run (the flat
// offset moves by the inner axis's extent per outer step, as oh and ow do in
// NHWC and NCHW without padding, stride or window), so any tile of the merged
// axis is a legal tile of the same memory. Reduction axes of one element are
// dropped (a 1x1 window's kh and kw). Each merged tensor is a view of the
// same buffer with two dimensions made one: a kernel built from the collapsed
// operator takes the original operator's buffers, in the same order.
#pragma once

#include "loom/operator.h"

namespace loom {

// `op` with every mergeable pair of adjacent output axes merged and unit
// reduction axes dropped; `op` itself (the same tensors) when nothing
// merges. Its inputs and outputs hold the same elements in the same order
// as op's, and its size variables and flop count are op's.
Operator collapse_axes(const Operator& op);

}  // namespace loom
