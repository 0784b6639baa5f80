// Generic traversal and the few analyses every later stage needs.
//
// visit() and transform() are the only places that know each node's
// children; substitution, inlining and flattening are written on top of them.
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/expr_nodes.h"

namespace loom {

// The direct sub-expressions of `e` (a reduction's extents included).
std::vector<Expr> children(const Expr& e);
// `e` rebuilt with new children, in the order children() gives them.
Expr with_children(const Expr& e, const std::vector<Expr>& kids);

// Pre-order walk; `fn` returns false to skip a node's children.
void visit(const Expr& e, const std::function<bool(const Expr&)>& fn);

// Bottom-up rewrite: `fn` sees each node after its children were rewritten
// and returns a replacement, or nullopt to keep it.
Expr transform(const Expr& e, const std::function<std::optional<Expr>(const Expr&)>& fn);

using VarMap = std::unordered_map<const ExprNode*, Expr>;
// Replaces variables (keyed by their node) with expressions.
Expr substitute(const Expr& e, const VarMap& map);

bool uses_var(const Expr& e, const ExprNode* var);

// The conjuncts of a condition: a && (b && c) as a, b, c.
std::vector<Expr> conjuncts(const Expr& cond);

// The coefficient c such that e = c * var + (terms free of var), when e is
// affine in var with a constant coefficient; nullopt otherwise.
std::optional<int64_t> linear_coeff(const Expr& e, const ExprNode* var);

// Whether the expression calls functions much dearer than an FMA (exp,
// tanh, erf, log, sqrt, rsqrt): recomputing them is not free.
bool has_expensive_math(const Expr& e);

}  // namespace loom
