// Binding symbolic sizes to values, and evaluating size expressions.
//
// An operator's shapes are Exprs over its size Vars. When real buffers
// arrive, every Var gets a value from the first input dimension that is that
// bare Var; every shape is then evaluated and checked against the buffers.
#pragma once

#include <cstdint>
#include <string>
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

namespace loom {

// The operator with its symbolic sizes replaced by `values` (op.size_vars
// order): every shape, body and reduction extent becomes constant, and
// parameters named like a size var take its value. UserError as bind_sizes.
Operator with_sizes(const Operator& op, const std::vector<int64_t>& values);

// The operator's whole structure as text: every tensor's name, shape, dtype
// and body, producers first. Equal texts compute the same thing; caches key
// compiled code by it.
std::string structure_text(const Operator& op);

// For operators assembled by hand: UserError when there are no outputs, or
// a Var in some tensor's shape is not among op.size_vars (te::build_operator
// derives them; see loom/operator.h).
void check_operator_sizes(const Operator& op);

// Generated code assumes outputs alias nothing (its buffers are noalias):
// UserError naming the pair when an output overlaps an input or another output.
void check_no_output_aliasing(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs);

}  // namespace loom
