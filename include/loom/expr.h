// Scalar expressions: the vocabulary of compute definitions.
//
// An Expr is an immutable, shared handle to an expression tree. Index
// arithmetic is int64; element math is in the tensor's dtype. Integer `/` and
// `%` are floor division and floor modulo (so negative offsets behave, as in
// transposed convolutions). Sizes are Exprs too: a Var may stand for a
// dimension that is bound only when a kernel runs, so nothing built from these
// types may assume constant extents.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/dtype.h"

namespace loom {

struct ExprNode;  // defined in src/ir/expr_nodes.h

class Expr {
 public:
  Expr() = default;
  Expr(int v);      // NOLINT: int64 immediate
  Expr(int64_t v);  // NOLINT: int64 immediate
  Expr(float v);    // NOLINT: f32 immediate
  Expr(double v);   // NOLINT: f32 immediate (element math is fp32 today)
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  DType dtype() const;
  const ExprNode* get() const { return node_.get(); }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }
  // The value when this is an integer immediate.
  std::optional<int64_t> as_const_int() const;
  std::string str() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

// A named variable: a loop index or a symbolic size. Identity is the object,
// not the name.
class Var : public Expr {
 public:
  explicit Var(const std::string& name, DType type = DType::i64());
  // Views an expression that is a variable as a Var (UserError otherwise).
  static Var from(const Expr& var_expr);
  const std::string& name() const;
};

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floor division on integers
Expr operator%(Expr a, Expr b);  // floor modulo on integers
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);

Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr cond, Expr then_value, Expr else_value);
Expr cast(DType type, Expr value);
Expr exp(Expr x);
Expr log(Expr x);
Expr tanh(Expr x);
Expr erf(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr abs(Expr x);
// The largest finite / lowest finite value of a float type (used as the
// identity of max/min reductions and as padding for max pooling).
Expr lowest(DType type);
Expr highest(DType type);

}  // namespace loom
