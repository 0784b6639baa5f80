// Shared helpers for the operator builders.
#pragma once

#include <string>
#include <vector>

#include "loom/operator.h"

namespace loom::ops {

// Fills the operator's symbolic size list from its tensors' shapes.
Operator finish_operator(const std::string& name, std::vector<te::Tensor> inputs,
                         std::vector<te::Tensor> outputs, Expr flops);

// x * 0.5 * (1 + erf(x / sqrt(2))): the exact GELU.
Expr gelu_of(const Expr& x);

// A zero-padded view of a 4-D input: the spatial axes (h_axis, h_axis + 1)
// grow by `pad` on each side; reads outside the input give `fill`.
te::Tensor pad_spatial(const te::Tensor& x, int h_axis, int64_t pad, Expr fill);

}  // namespace loom::ops
