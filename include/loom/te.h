// Tensor expressions: declaring what an operator computes, not how.
//
// A te::Tensor is either a placeholder (an input) or a compute: a shape plus a
// body that gives element (i0, i1, ...) as an Expr of the axis variables. A
// body may be a reduction (sum/max/min over reduction axes) at its top level,
// as in TVM; anything applied after a reduction goes into a consumer tensor.
// Schedules decide loop structure later; these definitions never change.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/expr.h"

namespace loom::te {

struct TensorNode;  // defined in src/ir/expr_nodes.h

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> node) : node_(std::move(node)) {}

  const std::string& name() const;
  const std::vector<Expr>& shape() const;
  DType dtype() const;
  int ndim() const { return static_cast<int>(shape().size()); }
  bool is_placeholder() const;
  bool defined() const { return node_ != nullptr; }
  const TensorNode* get() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node() const { return node_; }

  // Element access; the number of indices must equal ndim().
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... I>
  Expr operator()(I... idx) const {
    return (*this)(std::vector<Expr>{Expr(idx)...});
  }

 private:
  std::shared_ptr<const TensorNode> node_;
};

// A reduction axis ranging over [0, extent).
struct IterVar {
  Var var;
  Expr extent;
};

IterVar reduce_axis(Expr extent, const std::string& name);

Tensor placeholder(std::vector<Expr> shape, const std::string& name,
                   DType type = DType::f32());

using ComputeBody = std::function<Expr(const std::vector<Var>& axes)>;
Tensor compute(std::vector<Expr> shape, const ComputeBody& body, const std::string& name);

// `then_value` where `cond` holds, else `else_value`; reads in `then_value`
// are bounds-checked only where `cond` holds (a guarded read).
Expr if_then_else(Expr cond, Expr then_value, Expr else_value);

Expr sum(Expr source, std::vector<IterVar> axes);
Expr max(Expr source, std::vector<IterVar> axes);
Expr min(Expr source, std::vector<IterVar> axes);

}  // namespace loom::te
