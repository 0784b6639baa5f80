// Tensor declarations: placeholders, computes and reductions.
#include "ir/analysis.h"
#include "ir/expr_nodes.h"

namespace loom::te {

const std::string& Tensor::name() const { return node_->name; }
const std::vector<Expr>& Tensor::shape() const { return node_->shape; }
DType Tensor::dtype() const { return node_->dtype; }
bool Tensor::is_placeholder() const { return node_->is_placeholder; }

Expr Tensor::operator()(std::vector<Expr> indices) const {
  LOOM_USER_CHECK(defined(), "access to an undefined tensor");
  LOOM_USER_CHECK(indices.size() == shape().size(), "tensor '", name(), "' has ", shape().size(),
                  " dimensions but was indexed with ", indices.size());
  for (const Expr& i : indices)
    LOOM_USER_CHECK(i.defined() && i.dtype().is_int(), "index ", i.defined() ? i.str() : "undefined",
                    " into tensor '", name(), "' is not an integer");
  return Expr(std::make_shared<TensorReadNode>(*this, std::move(indices)));
}

namespace {

void check_shape(const std::vector<Expr>& shape, const std::string& name) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const Expr& e = shape[d];
    LOOM_USER_CHECK(e.defined() && e.dtype().is_int(), "dimension ", d, " of tensor '", name,
                    "' is not an integer size");
    if (auto v = e.as_const_int())
      LOOM_USER_CHECK(*v > 0, "dimension ", d, " of tensor '", name, "' must be positive, got ", *v);
  }
}

}  // namespace

IterVar reduce_axis(Expr extent, const std::string& name) {
  LOOM_USER_CHECK(extent.defined() && extent.dtype().is_int(), "reduction axis '", name,
                  "' needs an integer extent");
  if (auto v = extent.as_const_int())
    LOOM_USER_CHECK(*v > 0, "reduction axis '", name, "' must have a positive extent, got ", *v);
  return IterVar{Var(name), std::move(extent)};
}

Tensor placeholder(std::vector<Expr> shape, const std::string& name, DType type) {
  check_shape(shape, name);
  auto node = std::make_shared<TensorNode>();
  node->name = name;
  node->shape = std::move(shape);
  node->dtype = type;
  return Tensor(node);
}

Tensor compute(std::vector<Expr> shape, const ComputeBody& body, const std::string& name) {
  check_shape(shape, name);
  auto node = std::make_shared<TensorNode>();
  node->name = name;
  node->is_placeholder = false;
  node->shape = shape;
  static const char* axis_names = "ijlmnopqrstuvw";
  for (size_t d = 0; d < shape.size(); ++d)
    node->axes.emplace_back(d < 14 ? std::string(1, axis_names[d]) : "ax" + std::to_string(d));
  node->body = body(node->axes);
  LOOM_USER_CHECK(node->body.defined(), "compute '", name, "' has an undefined body");
  // A reduction may only be the whole body, as in TVM: post-processing of a
  // reduced value belongs to a consumer tensor.
  visit(Expr(node->body), [&](const Expr& e) {
    LOOM_USER_CHECK(e.get() == node->body.get() || !e.get()->as<ReduceNode>(),
                    "compute '", name, "': a reduction must be the whole body, found ", e.str(),
                    " nested inside");
    return true;
  });
  node->dtype = node->body.dtype();
  return Tensor(node);
}

Expr if_then_else(Expr cond, Expr then_value, Expr else_value) {
  return select(std::move(cond), std::move(then_value), std::move(else_value));
}

Expr sum(Expr source, std::vector<IterVar> axes) { return make_reduce(ReduceOp::Sum, std::move(source), std::move(axes)); }
Expr max(Expr source, std::vector<IterVar> axes) { return make_reduce(ReduceOp::Max, std::move(source), std::move(axes)); }
Expr min(Expr source, std::vector<IterVar> axes) { return make_reduce(ReduceOp::Min, std::move(source), std::move(axes)); }

}  // namespace loom::te
