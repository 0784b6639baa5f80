// Interprets compute definitions in double precision, on demand.
#include <cmath>
#include <random>
#include <unordered_map>

#include "ir/expr_nodes.h"
#include "ir/size_binding.h"
#include "loom/error.h"
#include "loom/reference.h"

namespace loom {

namespace {

// Values of one compute tensor, filled point by point as they are needed.
struct Memo {
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<uint8_t> done;
};

class Interpreter {
 public:
  Interpreter(const Operator& op, const std::vector<Buffer>& inputs)
      : env_(bind_sizes(op, inputs)) {
    for (size_t i = 0; i < inputs.size(); ++i) inputs_[op.inputs[i].get()] = inputs[i];
  }

  const SizeBinding& binding() const { return env_; }

  // The value of tensor `t` at `point`.
  double at(const te::Tensor& t, const std::vector<int64_t>& point) {
    const TensorNode* node = t.get();
    if (node->is_placeholder) {
      auto it = inputs_.find(node);
      LOOM_INTERNAL_CHECK(it != inputs_.end(), "placeholder '", node->name, "' is not an operator input");
      const Buffer& b = it->second;
      return b.as<float>()[offset(b.shape(), point, node->name)];
    }
    Memo& memo = memo_for(node);
    int64_t flat = offset(memo.shape, point, node->name);
    if (!memo.done[flat]) {
      memo.values[flat] = compute_point(*node, point);
      memo.done[flat] = 1;
    }
    return memo.values[flat];
  }

  std::vector<int64_t> shape_of(const te::Tensor& t) { return eval_shape(t.shape(), env_); }

 private:
  Memo& memo_for(const TensorNode* node) {
    auto [it, fresh] = memo_.try_emplace(node);
    if (fresh) {
      it->second.shape = eval_shape(node->shape, env_);
      int64_t n = 1;
      for (int64_t d : it->second.shape) n *= d;
      it->second.values.assign(n, 0.0);
      it->second.done.assign(n, 0);
    }
    return it->second;
  }

  static int64_t offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& point,
                        const std::string& name) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      LOOM_INTERNAL_CHECK(point[d] >= 0 && point[d] < shape[d], "read of '", name, "' out of bounds: index ",
                          point[d], " in dimension ", d, " of extent ", shape[d]);
      flat = flat * shape[d] + point[d];
    }
    return flat;
  }

  double compute_point(const TensorNode& node, const std::vector<int64_t>& point) {
    for (size_t d = 0; d < point.size(); ++d) env_[node.axes[d].get()] = point[d];
    const auto* red = node.body.get()->as<ReduceNode>();
    if (!red) return real(node.body);
    // Reduction axes may be bound already by an outer point of the same
    // tensor; axes are fresh per point, so plain rebinding is enough.
    std::vector<int64_t> extents;
    for (const auto& ax : red->axes) extents.push_back(integer(ax.extent));
    double acc = red->op == ReduceOp::Sum ? 0.0 : red->op == ReduceOp::Max ? -INFINITY : INFINITY;
    std::vector<int64_t> r(extents.size(), 0);
    // Saved: evaluating the source may recurse into other tensors, which
    // rebind only their own axes.
    std::vector<int64_t> saved_point = point;
    while (true) {
      for (size_t d = 0; d < r.size(); ++d) env_[red->axes[d].var.get()] = r[d];
      for (size_t d = 0; d < saved_point.size(); ++d) env_[node.axes[d].get()] = saved_point[d];
      double v = real(red->source);
      acc = red->op == ReduceOp::Sum ? acc + v : red->op == ReduceOp::Max ? std::max(acc, v) : std::min(acc, v);
      size_t d = r.size();
      while (d > 0 && ++r[d - 1] == extents[d - 1]) r[--d] = 0;
      if (d == 0) break;
    }
    return acc;
  }

  int64_t integer(const Expr& e) {
    const ExprNode* n = e.get();
    switch (n->kind) {
      case ExprKind::IntImm: return n->as<IntImmNode>()->value;
      case ExprKind::Var: {
        auto it = env_.find(n);
        LOOM_INTERNAL_CHECK(it != env_.end(), "variable '", n->as<VarNode>()->name, "' is unbound");
        return it->second;
      }
      case ExprKind::Binary: {
        auto* b = n->as<BinaryNode>();
        return apply_int_op(b->op, integer(b->a), integer(b->b));
      }
      case ExprKind::Unary:
        if (n->as<UnaryNode>()->op == UnaryOp::Neg) return -integer(n->as<UnaryNode>()->a);
        break;
      case ExprKind::Select: {
        auto* s = n->as<SelectNode>();
        return condition(s->cond) ? integer(s->then_value) : integer(s->else_value);
      }
      default: break;
    }
    throw InternalError("reference: cannot evaluate integer expression " + e.str());
  }

  bool condition(const Expr& e) {
    const ExprNode* n = e.get();
    if (auto* c = n->as<CompareNode>()) {
      if (!c->a.dtype().is_float()) return apply_compare(c->op, integer(c->a), integer(c->b));  // exactly in int64
      return apply_compare(c->op, real(c->a), real(c->b));
    }
    if (auto* b = n->as<BinaryNode>()) {
      if (b->op == BinaryOp::And) return condition(b->a) && condition(b->b);  // short-circuit
      if (b->op == BinaryOp::Or) return condition(b->a) || condition(b->b);
    }
    if (auto* u = n->as<UnaryNode>(); u && u->op == UnaryOp::Not) return !condition(u->a);
    throw InternalError("reference: cannot evaluate condition " + e.str());
  }

  double real(const Expr& e) {
    const ExprNode* n = e.get();
    if (!n->dtype.is_float()) return double(integer(e));
    switch (n->kind) {
      case ExprKind::FloatImm: return n->as<FloatImmNode>()->value;
      case ExprKind::Cast: {
        const Expr& v = n->as<CastNode>()->value;
        return v.dtype().is_float() ? real(v) : double(integer(v));
      }
      case ExprKind::Binary: {
        auto* b = n->as<BinaryNode>();
        double x = real(b->a), y = real(b->b);
        switch (b->op) {
          case BinaryOp::Add: return x + y;
          case BinaryOp::Sub: return x - y;
          case BinaryOp::Mul: return x * y;
          case BinaryOp::Div: return x / y;
          case BinaryOp::Min: return std::min(x, y);
          case BinaryOp::Max: return std::max(x, y);
          default: break;
        }
        break;
      }
      case ExprKind::Unary: {
        auto* u = n->as<UnaryNode>();
        double x = real(u->a);
        switch (u->op) {
          case UnaryOp::Neg: return -x;
          case UnaryOp::Exp: return std::exp(x);
          case UnaryOp::Log: return std::log(x);
          case UnaryOp::Tanh: return std::tanh(x);
          case UnaryOp::Erf: return std::erf(x);
          case UnaryOp::Sqrt: return std::sqrt(x);
          case UnaryOp::Rsqrt: return 1.0 / std::sqrt(x);
          case UnaryOp::Abs: return std::fabs(x);
          default: break;
        }
        break;
      }
      case ExprKind::Select: {  // only the taken side is evaluated
        auto* s = n->as<SelectNode>();
        return condition(s->cond) ? real(s->then_value) : real(s->else_value);
      }
      case ExprKind::TensorRead: {
        auto* r = n->as<TensorReadNode>();
        std::vector<int64_t> point;
        for (const Expr& i : r->indices) point.push_back(integer(i));
        return at(r->tensor, point);
      }
      default: break;
    }
    throw InternalError("reference: cannot evaluate " + e.str());
  }

  SizeBinding env_;
  std::unordered_map<const TensorNode*, Buffer> inputs_;
  std::unordered_map<const TensorNode*, Memo> memo_;
};

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> p(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    p[d] = flat % shape[d];
    flat /= shape[d];
  }
  return p;
}

}  // namespace

CheckResult check_against_reference(const Operator& op, const std::vector<Buffer>& inputs,
                                    const std::vector<Buffer>& outputs, const CheckOptions& options) {
  Interpreter interp(op, inputs);
  check_output_shapes(op, outputs, interp.binding());
  CheckResult result;
  result.ok = true;
  std::mt19937_64 rng(options.seed);
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<int64_t> shape = interp.shape_of(op.outputs[o]);
    const int64_t n = outputs[o].numel();
    const bool all = n <= options.max_points;
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    for (int64_t s = 0; s < (all ? n : options.max_points); ++s) {
      int64_t flat = all ? s : pick(rng);
      double want = interp.at(op.outputs[o], unflatten(flat, shape));
      double got = outputs[o].as<float>()[flat];
      double err = std::fabs(got - want) / std::max(std::fabs(want), 1.0);
      if (!(err <= options.tolerance)) result.ok = false;  // NaN fails too
      if (std::isnan(err)) err = INFINITY;
      result.max_rel_err = std::max(result.max_rel_err, err);
      ++result.points_checked;
    }
  }
  return result;
}

std::vector<Buffer> evaluate_reference(const Operator& op, const std::vector<Buffer>& inputs) {
  Interpreter interp(op, inputs);
  std::vector<Buffer> outs;
  for (const te::Tensor& t : op.outputs) {
    std::vector<int64_t> shape = interp.shape_of(t);
    Buffer b = Buffer::allocate(shape, t.dtype());
    for (int64_t i = 0; i < b.numel(); ++i) b.as<float>()[i] = float(interp.at(t, unflatten(i, shape)));
    outs.push_back(b);
  }
  return outs;
}

std::vector<Buffer> random_inputs(const Operator& op, uint64_t seed, const std::vector<int64_t>& sizes,
                                  double lo, double hi) {
  SizeBinding binding = bind_sizes(op, sizes);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist{float(lo), float(hi)};
  std::vector<Buffer> bufs;
  for (const te::Tensor& t : op.inputs) {
    Buffer b = Buffer::allocate(eval_shape(t.shape(), binding), t.dtype());
    for (int64_t i = 0; i < b.numel(); ++i) b.as<float>()[i] = dist(rng);
    bufs.push_back(b);
  }
  return bufs;
}

}  // namespace loom
