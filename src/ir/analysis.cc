#include "ir/analysis.h"

#include "support/checked.h"

namespace loom {

std::vector<Expr> children(const Expr& e) {
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return {};
    case ExprKind::Binary: { auto* b = n->as<BinaryNode>(); return {b->a, b->b}; }
    case ExprKind::Unary: return {n->as<UnaryNode>()->a};
    case ExprKind::Compare: { auto* c = n->as<CompareNode>(); return {c->a, c->b}; }
    case ExprKind::Select: { auto* s = n->as<SelectNode>(); return {s->cond, s->then_value, s->else_value}; }
    case ExprKind::Cast: return {n->as<CastNode>()->value};
    case ExprKind::TensorRead: return n->as<TensorReadNode>()->indices;
    case ExprKind::Reduce: {
      auto* r = n->as<ReduceNode>();
      std::vector<Expr> kids{r->source};
      for (const auto& ax : r->axes) kids.push_back(ax.extent);
      return kids;
    }
    case ExprKind::Load: return {n->as<LoadNode>()->index};
  }
  throw InternalError("children(): unknown expression kind");
}

Expr with_children(const Expr& e, const std::vector<Expr>& k) {
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return e;
    case ExprKind::Binary: return make_binary(n->as<BinaryNode>()->op, k[0], k[1]);
    case ExprKind::Unary: return make_unary(n->as<UnaryNode>()->op, k[0]);
    case ExprKind::Compare: return make_compare(n->as<CompareNode>()->op, k[0], k[1]);
    case ExprKind::Select: return select(k[0], k[1], k[2]);
    case ExprKind::Cast: return cast(n->dtype, k[0]);
    case ExprKind::TensorRead: return n->as<TensorReadNode>()->tensor(k);
    case ExprKind::Reduce: {
      auto* r = n->as<ReduceNode>();
      std::vector<te::IterVar> axes = r->axes;
      for (size_t i = 0; i < axes.size(); ++i) axes[i].extent = k[i + 1];
      return make_reduce(r->op, k[0], axes);
    }
    case ExprKind::Load: return make_load(n->as<LoadNode>()->buffer, k[0]);
  }
  throw InternalError("with_children(): unknown expression kind");
}

void visit(const Expr& e, const std::function<bool(const Expr&)>& fn) {
  if (!fn(e)) return;
  for (const Expr& c : children(e)) visit(c, fn);
}

Expr transform(const Expr& e, const std::function<std::optional<Expr>(const Expr&)>& fn) {
  std::vector<Expr> kids = children(e);
  bool changed = false;
  for (Expr& c : kids) {
    Expr t = transform(c, fn);
    changed |= t.get() != c.get();
    c = std::move(t);
  }
  Expr rebuilt = changed ? with_children(e, kids) : e;
  if (auto r = fn(rebuilt)) return *r;
  return rebuilt;
}

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return transform(e, [&](const Expr& x) -> std::optional<Expr> {
    if (x.get()->kind != ExprKind::Var) return std::nullopt;
    auto it = map.find(x.get());
    if (it == map.end()) return std::nullopt;
    return it->second;
  });
}

bool uses_var(const Expr& e, const ExprNode* var) {
  bool found = false;
  visit(e, [&](const Expr& x) {
    found |= x.get() == var;
    return !found;
  });
  return found;
}

std::vector<Expr> conjuncts(const Expr& cond) {
  if (auto* b = cond.get()->as<BinaryNode>(); b && b->op == BinaryOp::And) {
    std::vector<Expr> x = conjuncts(b->a), y = conjuncts(b->b);
    x.insert(x.end(), y.begin(), y.end());
    return x;
  }
  return {cond};
}

// Coefficient arithmetic that overflows (the strides of a tensor too large
// to index) gives no known coefficient.
std::optional<int64_t> linear_coeff(const Expr& e, const ExprNode* var) {
  const ExprNode* n = e.get();
  if (n == var) return 1;
  if (!uses_var(e, var)) return 0;
  if (auto* b = n->as<BinaryNode>()) {
    auto ca = linear_coeff(b->a, var), cb = linear_coeff(b->b, var);
    if (!ca || !cb) return std::nullopt;
    switch (b->op) {
      case BinaryOp::Add: return add_or_none(*ca, *cb);
      case BinaryOp::Sub: return sub_or_none(*ca, *cb);
      case BinaryOp::Mul:
        if (*ca == 0) {
          if (auto k = b->a.as_const_int()) return mul_or_none(*k, *cb);
        } else if (*cb == 0) {
          if (auto k = b->b.as_const_int()) return mul_or_none(*k, *ca);
        }
        return std::nullopt;
      default: return std::nullopt;
    }
  }
  if (auto* u = n->as<UnaryNode>(); u && u->op == UnaryOp::Neg) {
    if (auto c = linear_coeff(u->a, var)) return sub_or_none(0, *c);
  }
  return std::nullopt;
}

bool has_expensive_math(const Expr& e) {
  bool found = false;
  visit(e, [&](const Expr& x) {
    if (auto* u = x.get()->as<UnaryNode>())
      found |= u->op == UnaryOp::Exp || u->op == UnaryOp::Log || u->op == UnaryOp::Tanh ||
               u->op == UnaryOp::Erf || u->op == UnaryOp::Sqrt || u->op == UnaryOp::Rsqrt;
    return !found;
  });
  return found;
}

}  // namespace loom
