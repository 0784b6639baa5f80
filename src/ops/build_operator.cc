// te::build_operator: an Operator from user tensors, checked so that the
// user's mistakes are UserErrors naming their tensors and variables.
//
// Reads are checked by interval analysis over each compute's loop domain:
// every index expression's range, with the axes and reduction axes over
// [0, extent - 1], must lie inside the read tensor's dimension. A read in
// the taken branch of a select is checked under that branch's condition
// (comparisons of an index variable with a bound narrow its range), which is
// how guarded reads (padding) are declared. Symbolic sizes are checked at
// several bindings of the operator's size variables.
#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/analysis.h"
#include "ir/expr_nodes.h"
#include "ir/size_binding.h"
#include "loom/error.h"
#include "loom/operator.h"
#include "ops/op_builder.h"
#include "support/checked.h"

namespace loom::te {

namespace {

struct Interval {
  int64_t lo = 0, hi = 0;
};
using Ranges = std::unordered_map<const ExprNode*, Interval>;

int64_t saturate(__int128 v) {
  constexpr int64_t kBig = int64_t(1) << 62;
  return v > kBig ? kBig : v < -kBig ? -kBig : int64_t(v);
}

// The range of an integer expression; nothing when it cannot be bounded.
std::optional<Interval> range_of(const Expr& e, const Ranges& ranges) {
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::IntImm: {
      const int64_t v = n->as<IntImmNode>()->value;
      return Interval{v, v};
    }
    case ExprKind::Var: {
      auto it = ranges.find(n);
      if (it == ranges.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Cast: return range_of(n->as<CastNode>()->value, ranges);
    case ExprKind::Binary: {
      auto* b = n->as<BinaryNode>();
      auto x = range_of(b->a, ranges), y = range_of(b->b, ranges);
      if (!x || !y) return std::nullopt;
      __int128 c[4];
      switch (b->op) {
        case BinaryOp::Add: return Interval{saturate(__int128(x->lo) + y->lo), saturate(__int128(x->hi) + y->hi)};
        case BinaryOp::Sub: return Interval{saturate(__int128(x->lo) - y->hi), saturate(__int128(x->hi) - y->lo)};
        case BinaryOp::Mul:
          c[0] = __int128(x->lo) * y->lo, c[1] = __int128(x->lo) * y->hi, c[2] = __int128(x->hi) * y->lo,
          c[3] = __int128(x->hi) * y->hi;
          return Interval{saturate(*std::min_element(c, c + 4)), saturate(*std::max_element(c, c + 4))};
        case BinaryOp::Div:  // floor division, by a positive divisor
          if (y->lo <= 0) return std::nullopt;
          return Interval{std::min(apply_int_op(BinaryOp::Div, x->lo, y->lo), apply_int_op(BinaryOp::Div, x->lo, y->hi)),
                          std::max(apply_int_op(BinaryOp::Div, x->hi, y->lo), apply_int_op(BinaryOp::Div, x->hi, y->hi))};
        case BinaryOp::Mod:
          if (y->lo <= 0) return std::nullopt;
          return Interval{0, y->hi - 1};
        case BinaryOp::Min: return Interval{std::min(x->lo, y->lo), std::min(x->hi, y->hi)};
        case BinaryOp::Max: return Interval{std::max(x->lo, y->lo), std::max(x->hi, y->hi)};
        default: return std::nullopt;
      }
    }
    case ExprKind::Select: {
      auto* s = n->as<SelectNode>();
      auto x = range_of(s->then_value, ranges), y = range_of(s->else_value, ranges);
      if (!x || !y) return std::nullopt;
      return Interval{std::min(x->lo, y->lo), std::max(x->hi, y->hi)};
    }
    default: return std::nullopt;
  }
}

// `ranges` narrowed by `cond` holding: conjunctions of comparisons between
// an index variable and an expression with a range.
Ranges narrowed(const Expr& cond, Ranges ranges) {
  if (auto* b = cond.get()->as<BinaryNode>(); b && b->op == BinaryOp::And) return narrowed(b->b, narrowed(b->a, ranges));
  auto* c = cond.get()->as<CompareNode>();
  if (!c) return ranges;
  // `lhs op bound` with lhs = var +- terms: moves the terms to the bound.
  std::function<void(const Expr&, CompareOp, const Expr&)> narrow = [&](const Expr& lhs, CompareOp op,
                                                                         const Expr& bound) {
    if (auto* add = lhs.get()->as<BinaryNode>(); add && (add->op == BinaryOp::Add || add->op == BinaryOp::Sub)) {
      narrow(add->a, op, add->op == BinaryOp::Add ? bound - add->b : bound + add->b);
      if (add->op == BinaryOp::Add) narrow(add->b, op, bound - add->a);
      return;
    }
    const Expr& var = lhs;
    auto it = ranges.find(var.get());
    if (var.get()->kind != ExprKind::Var || it == ranges.end()) return;
    std::optional<Interval> b = range_of(bound, ranges);
    if (!b) return;
    Interval& r = it->second;
    switch (op) {
      case CompareOp::LT: r.hi = std::min(r.hi, b->hi - 1); break;
      case CompareOp::LE: r.hi = std::min(r.hi, b->hi); break;
      case CompareOp::GT: r.lo = std::max(r.lo, b->lo + 1); break;
      case CompareOp::GE: r.lo = std::max(r.lo, b->lo); break;
      case CompareOp::EQ: r.lo = std::max(r.lo, b->lo), r.hi = std::min(r.hi, b->hi); break;
      default: break;
    }
  };
  narrow(c->a, c->op, c->b);
  narrow(c->b, mirrored(c->op), c->a);
  return ranges;
}

std::string interval_text(const Interval& r) { return "[" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]"; }

// Every read in `e` (under the ranges its enclosing selects allow) inside its tensor.
void check_reads(const Expr& e, const Ranges& ranges, const SizeBinding& sizes, const TensorNode& reader) {
  const ExprNode* n = e.get();
  if (auto* s = n->as<SelectNode>()) {
    check_reads(s->cond, ranges, sizes, reader);
    const Ranges taken = narrowed(s->cond, ranges);
    bool empty = false;
    for (const auto& [var, r] : taken) empty |= r.lo > r.hi;
    if (!empty) check_reads(s->then_value, taken, sizes, reader);
    check_reads(s->else_value, ranges, sizes, reader);
    return;
  }
  if (auto* r = n->as<ReduceNode>()) {
    Ranges inner = ranges;
    for (const IterVar& ax : r->axes) inner[ax.var.get()] = Interval{0, eval_int(ax.extent, sizes) - 1};
    check_reads(r->source, inner, sizes, reader);
    return;
  }
  if (auto* read = n->as<TensorReadNode>()) {
    const std::vector<Expr>& shape = read->tensor.shape();
    for (size_t d = 0; d < read->indices.size(); ++d) {
      const int64_t extent = eval_int(shape[d], sizes);
      std::optional<Interval> r = range_of(read->indices[d], ranges);
      LOOM_USER_CHECK(r.has_value(), "compute '", reader.name, "' reads '", read->tensor.name(), "' at dimension ",
                      d, " with index ", read->indices[d].str(), ", whose range cannot be bounded");
      LOOM_USER_CHECK(r->lo >= 0 && r->hi < extent, "compute '", reader.name, "' may read '", read->tensor.name(),
                      "' out of bounds: dimension ", d, " has extent ", extent, " but index ", read->indices[d].str(),
                      " reaches ", interval_text(*r), " (guard the read with te::if_then_else / select, or pad)");
    }
  }
  for (const Expr& c : children(e)) check_reads(c, ranges, sizes, reader);
}

void collect_tensors(const Tensor& t, std::unordered_set<const TensorNode*>& seen, std::vector<Tensor>& order) {
  if (!seen.insert(t.get()).second) return;
  if (!t.is_placeholder())
    visit(t.get()->body, [&](const Expr& e) {
      if (auto* r = e.get()->as<TensorReadNode>()) collect_tensors(r->tensor, seen, order);
      return true;
    });
  order.push_back(t);
}

// Floating-point operations per element of a compute's body (a reduction's
// combine counts one per reduced element).
Expr body_flops(const Expr& e) {
  const ExprNode* n = e.get();
  Expr own = make_int(0);
  if (n->dtype.is_float() && (n->kind == ExprKind::Binary || n->kind == ExprKind::Unary)) own = make_int(1);
  if (auto* r = n->as<ReduceNode>()) {
    Expr points = make_int(1);
    for (const IterVar& ax : r->axes) points = points * ax.extent;
    return points * (body_flops(r->source) + 1);
  }
  if (n->kind == ExprKind::TensorRead) return own;
  Expr total = own;
  for (const Expr& c : children(e)) total = total + body_flops(c);
  return total;
}

}  // namespace

Operator build_operator(const std::string& name, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs) {
  LOOM_USER_CHECK(!name.empty(), "an operator needs a name");
  LOOM_USER_CHECK(!outputs.empty(), "operator '", name, "' has no outputs");
  std::unordered_set<const TensorNode*> input_set;
  for (const Tensor& t : inputs) {
    LOOM_USER_CHECK(t.defined(), "operator '", name, "': an input tensor is undefined");
    LOOM_USER_CHECK(t.is_placeholder(), "operator '", name, "': input '", t.name(),
                    "' is a compute; inputs are placeholders");
    LOOM_USER_CHECK(input_set.insert(t.get()).second, "operator '", name, "': input '", t.name(), "' is listed twice");
  }
  std::unordered_set<const TensorNode*> seen;
  std::vector<Tensor> order;
  for (const Tensor& t : outputs) {
    LOOM_USER_CHECK(t.defined(), "operator '", name, "': an output tensor is undefined");
    LOOM_USER_CHECK(!t.is_placeholder(), "operator '", name, "': output '", t.name(), "' is a placeholder, not a compute");
    collect_tensors(t, seen, order);
  }
  for (const Tensor& t : order)
    LOOM_USER_CHECK(!t.is_placeholder() || input_set.count(t.get()), "operator '", name, "': tensor '", t.name(),
                    "' is read but is not among the inputs");

  Operator op = ops::finish_operator(name, inputs, outputs, make_int(0));
  std::unordered_set<const ExprNode*> size_vars;
  for (const Var& v : op.size_vars) size_vars.insert(v.get());
  // Every size a symbolic dimension can have is bound from some input's shape.
  std::unordered_set<const ExprNode*> bare;
  for (const Tensor& t : inputs)
    for (const Expr& d : t.shape())
      if (d.get()->kind == ExprKind::Var) bare.insert(d.get());
  auto check_sizes = [&](const Expr& e, const Tensor& where) {
    visit(e, [&](const Expr& x) {
      if (x.get()->kind == ExprKind::Var)
        LOOM_USER_CHECK(bare.count(x.get()), "operator '", name, "': size '", x.str(), "' used by '", where.name(),
                        "' is not a dimension of any input, so no call can bind it");
      return true;
    });
  };
  for (const Tensor& t : order) {
    for (const Expr& d : t.shape()) check_sizes(d, t);
    if (t.is_placeholder()) continue;
    std::unordered_set<const ExprNode*> bound = size_vars;
    for (const Var& a : t.get()->axes) bound.insert(a.get());
    visit(t.get()->body, [&](const Expr& x) {
      if (auto* r = x.get()->as<ReduceNode>())
        for (const IterVar& ax : r->axes) {
          check_sizes(ax.extent, t);
          bound.insert(ax.var.get());
        }
      if (x.get()->kind == ExprKind::Var)
        LOOM_USER_CHECK(bound.count(x.get()), "operator '", name, "': compute '", t.name(), "' uses variable '",
                        x.str(), "', which is none of its axes, reduction axes or the operator's sizes");
      return true;
    });
  }

  // Reads in bounds, at several bindings of the symbolic sizes.
  const std::vector<int64_t> samples = op.size_vars.empty() ? std::vector<int64_t>{0} : std::vector<int64_t>{1, 2, 7, 64, 1000};
  for (int64_t sample : samples) {
    SizeBinding sizes;
    for (const Var& v : op.size_vars) sizes[v.get()] = sample;
    for (const Tensor& t : order) {
      for (const Expr& d : t.shape())
        LOOM_USER_CHECK(eval_int(d, sizes) > 0, "operator '", name, "': tensor '", t.name(), "' has an empty dimension ",
                        d.str(), op.size_vars.empty() ? "" : " at sizes " + std::to_string(sample));
      if (t.is_placeholder()) continue;
      Ranges ranges;
      for (const auto& [var, value] : sizes) ranges[var] = Interval{value, value};
      for (size_t d = 0; d < t.shape().size(); ++d)
        ranges[t.get()->axes[d].get()] = Interval{0, eval_int(t.shape()[d], sizes) - 1};
      check_reads(t.get()->body, ranges, sizes, *t.get());
    }
  }

  Expr flops = make_int(0);
  for (const Tensor& t : order)
    if (!t.is_placeholder()) flops = flops + product(t.shape()) * body_flops(t.get()->body);
  op.flops = flops;
  return op;
}

}  // namespace loom::te
