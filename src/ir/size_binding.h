// Binding symbolic sizes to values, and evaluating size expressions.
//
// An operator's shapes are Exprs over its size Vars. When real buffers
// arrive, every Var gets a value from the first input dimension that is that
// bare Var; every shape is then evaluated and checked against the buffers.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "loom/buffer.h"
#include "loom/operator.h"

namespace loom {

using SizeBinding = std::unordered_map<const ExprNode*, int64_t>;

// Evaluates an integer expression whose variables are all bound.
int64_t eval_int(const Expr& e, const SizeBinding& binding);

std::vector<int64_t> eval_shape(const std::vector<Expr>& shape, const SizeBinding& binding);

// Binds op.size_vars from `values` (same order); UserError on a count mismatch
// or a non-positive value.
SizeBinding bind_sizes(const Operator& op, const std::vector<int64_t>& values);

// Binds op.size_vars from the input buffers and checks every input shape.
// UserError names the buffer, its shape and the expected shape.
SizeBinding bind_sizes(const Operator& op, const std::vector<Buffer>& inputs);

// Checks `outputs` against the op's output shapes under `binding`.
void check_output_shapes(const Operator& op, const std::vector<Buffer>& outputs, const SizeBinding& binding);

}  // namespace loom
