#include "schedule/anchor.h"

#include <algorithm>
#include <cstdlib>

#include "ir/analysis.h"
#include "schedule/schedule.h"

namespace loom {

namespace {

std::vector<int64_t> const_shape(const te::Tensor& t) {
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) {
    const std::optional<int64_t> size = e.as_const_int();
    if (!size) return {};
    shape.push_back(*size);
  }
  return shape;
}

bool reads_only_at_own_point(const te::Tensor& consumer, const te::Tensor& anchor) {
  const TensorNode* c = consumer.get();
  if (c->axes.size() != anchor.get()->axes.size() || c->body.get()->as<ReduceNode>()) return false;
  for (size_t d = 0; d < c->shape.size(); ++d)
    if (c->shape[d].get() != anchor.shape()[d].get() && c->shape[d].as_const_int() != anchor.shape()[d].as_const_int())
      return false;
  bool ok = true;
  visit(c->body, [&](const Expr& e) {
    if (auto* r = e.get()->as<TensorReadNode>(); r && r->tensor.get() == anchor.get())
      for (size_t d = 0; d < r->indices.size(); ++d) ok &= r->indices[d].get() == c->axes[d].get();
    return true;
  });
  return ok;
}

// The shape of the one placeholder a padded stage reads, where it reads it
// at the stage's own index plus a constant in every dimension; else empty.
std::vector<int64_t> padded_source_shape(const te::Tensor& padded) {
  const TensorNode* t = padded.get();
  std::vector<const TensorReadNode*> reads;
  visit(t->body, [&](const Expr& e) {
    if (auto* r = e.get()->as<TensorReadNode>()) reads.push_back(r);
    return true;
  });
  if (reads.size() != 1 || !reads[0]->tensor.is_placeholder() || reads[0]->indices.size() != t->axes.size()) return {};
  for (size_t d = 0; d < t->axes.size(); ++d)
    for (size_t v = 0; v < t->axes.size(); ++v)
      if (linear_coeff(reads[0]->indices[d], t->axes[v].get()) != std::optional<int64_t>(d == v ? 1 : 0)) return {};
  return const_shape(reads[0]->tensor);
}

Access analyze_access(const Expr& expr, const std::vector<Var>& axes) {
  const auto* read = expr.get()->as<TensorReadNode>();
  Access a;
  a.read = expr;
  a.tensor = read->tensor;
  a.indices = read->indices;
  a.const_shape = const_shape(a.tensor);
  Expr flat = flatten_index(read->indices, read->tensor.shape());
  for (const Var& v : axes) {
    a.uses_axis.push_back(false);
    for (const Expr& i : read->indices) a.uses_axis.back() = a.uses_axis.back() || uses_var(i, v.get());
    a.stride.push_back(linear_coeff(flat, v.get()));
  }
  if (!a.tensor.is_placeholder())
    visit(a.tensor.get()->body, [&](const Expr& e) {
      a.guarded |= e.get()->kind == ExprKind::Select;
      return !a.guarded;
    });
  if (a.guarded) a.source_shape = padded_source_shape(a.tensor);
  a.affine = true;
  for (const Expr& i : read->indices) {
    std::vector<Access::Term> row;
    for (size_t v = 0; v < axes.size(); ++v) {
      const std::optional<int64_t> coeff = linear_coeff(i, axes[v].get());
      a.affine &= coeff && *coeff >= 0;
      if (const int64_t c = std::abs(coeff.value_or(1))) row.push_back({int(v), c});
    }
    a.dim_terms.push_back(row);
  }
  return a;
}

// One bound of a window's padding on a spatial axis and a tap (reduction)
// axis: axis_coeff * x + tap_coeff * r + constant `op` 0, with x and r the
// axes' values, holds where the window reads inside its input (x * stride
// + r * dilation - pad >= 0, say). A step outside reads only padding.
struct WindowBound {
  int axis = 0, tap = 0;
  int64_t axis_coeff = 0, tap_coeff = 0, constant = 0;
  CompareOp op = CompareOp::GE;
};

// The source's padding (AnchorInfo::padding): the padded reads replaced by
// their stages' definitions at the read's indices, then the ordering
// comparisons of the condition under which the source is not the identity.
std::vector<PaddingBound> padding_bounds(const AnchorInfo& info) {
  std::vector<PaddingBound> bounds;
  if (!info.is_reduction) return bounds;
  Expr inlined = transform(info.source, [&](const Expr& x) -> std::optional<Expr> {
    for (const Access& acc : info.accesses) {
      if (x.get() != acc.read.get() || !acc.guarded) continue;
      const TensorNode* t = acc.tensor.get();
      VarMap at;
      for (size_t d = 0; d < t->axes.size(); ++d) at[t->axes[d].get()] = acc.indices[d];
      return substitute(t->body, at);
    }
    return std::nullopt;
  });
  auto kept = identity_unless(inlined, info.reduce_op, reduce_identity(info.reduce_op, info.stage.dtype()));
  if (!kept) return bounds;
  for (const Expr& c : conjuncts(kept->first)) {
    auto* cmp = c.get()->as<CompareNode>();
    if (cmp && cmp->a.dtype().is_int() && cmp->op != CompareOp::EQ && cmp->op != CompareOp::NE)
      bounds.push_back({cmp->a - cmp->b, cmp->op});
  }
  return bounds;
}

// The padding's inequalities that bound one spatial and one reduction axis.
std::vector<WindowBound> window_bounds(const AnchorInfo& info) {
  std::vector<WindowBound> bounds;
  VarMap zero;
  for (const Var& axis : info.axes) zero[axis.get()] = make_int(0);
  for (const PaddingBound& p : info.padding) {
    const Expr& d = p.value;
    WindowBound b;
    b.op = p.op;
    int spatial = 0, taps = 0;
    bool affine = true;
    for (int a = 0; a < info.num_axes(); ++a) {
      const std::optional<int64_t> k = linear_coeff(d, info.axes[a].get());
      affine &= k.has_value();
      if (!k || *k == 0) continue;
      if (info.is_reduce_axis(a)) {
        ++taps;
        b.tap = a;
        b.tap_coeff = *k;
      } else {
        ++spatial;
        b.axis = a;
        b.axis_coeff = *k;
      }
    }
    const std::optional<int64_t> constant = substitute(d, zero).as_const_int();
    if (!affine || spatial != 1 || taps != 1 || !constant) continue;
    b.constant = *constant;
    bounds.push_back(b);
  }
  return bounds;
}

// The taps [first, last] along a window bound's tap axis that read inside
// at position `x` of its spatial axis, narrowed by `b`.
void narrow_taps(const WindowBound& b, int64_t x, int64_t& first, int64_t& last) {
  // axis_coeff * x + tap_coeff * r + constant op 0, written k * r + rest op' 0 with k > 0.
  const bool flip = b.tap_coeff < 0;
  const int64_t k = std::abs(b.tap_coeff), rest = (b.axis_coeff * x + b.constant) * (flip ? -1 : 1);
  auto floor_div = [](int64_t a, int64_t d) { return apply_int_op(BinaryOp::Div, a, d); };
  switch (flip ? mirrored(b.op) : b.op) {
    case CompareOp::GE: first = std::max(first, -floor_div(rest, k)); break;
    case CompareOp::GT: first = std::max(first, floor_div(-rest, k) + 1); break;
    case CompareOp::LE: last = std::min(last, floor_div(-rest, k)); break;
    case CompareOp::LT: last = std::min(last, -floor_div(rest, k) - 1); break;
    default: break;
  }
}

// The window bounds tabulated per position of each padded axis (the
// analytic model reads them for every state it weighs), up to a bound on
// the table.
constexpr int64_t kMaxTabulatedPositions = 1 << 14;
std::vector<PaddedAxis> padded_axes(const AnchorInfo& info) {
  const std::vector<WindowBound> bounds = window_bounds(info);
  std::vector<PaddedAxis> axes;
  for (int a = 0; a < info.num_spatial; ++a) {
    PaddedAxis p;
    p.axis = a;
    p.tap = -1;
    bool one_tap = true;
    for (const WindowBound& b : bounds)
      if (b.axis == a) {
        one_tap &= p.tap < 0 || p.tap == b.tap;
        p.tap = b.tap;
      }
    if (p.tap < 0 || !one_tap) continue;
    const int64_t E = info.const_extent[size_t(a)], K = info.const_extent[size_t(p.tap)];
    if (E <= 0 || K <= 0 || E > kMaxTabulatedPositions) continue;  // the model then charges every step
    for (int64_t x = 0; x < E; ++x) {
      int64_t first = 0, last = K - 1;
      for (const WindowBound& b : bounds)
        if (b.axis == a) narrow_taps(b, x, first, last);
      p.taps.push_back({first, last});
    }
    axes.push_back(std::move(p));
  }
  return axes;
}

}  // namespace

std::optional<std::pair<Expr, Expr>> identity_unless(const Expr& source, ReduceOp op, const Expr& identity) {
  if (auto* sel = source.get()->as<SelectNode>()) {
    auto* other = sel->else_value.get()->as<FloatImmNode>();
    auto* id = identity.get()->as<FloatImmNode>();
    if (other && id && other->value == id->value) return std::pair{sel->cond, sel->then_value};
    return std::nullopt;
  }
  auto* mul = source.get()->as<BinaryNode>();
  if (op != ReduceOp::Sum || !mul || mul->op != BinaryOp::Mul) return std::nullopt;
  if (auto a = identity_unless(mul->a, op, identity)) return std::pair{a->first, a->second * mul->b};
  if (auto b = identity_unless(mul->b, op, identity)) return std::pair{b->first, mul->a * b->second};
  return std::nullopt;
}

Access with_row_pitch(const Access& x, int64_t pitch) {
  Access y = x;
  if (!x.affine || x.const_shape.size() != x.dim_terms.size() || x.const_shape.empty()) return y;
  y.const_shape.back() = pitch;
  std::vector<int64_t> dim_stride(y.const_shape.size(), 1);
  for (size_t d = dim_stride.size() - 1; d-- > 0;) dim_stride[d] = dim_stride[d + 1] * y.const_shape[d + 1];
  for (size_t a = 0; a < y.stride.size(); ++a) {
    if (!y.stride[a]) continue;
    int64_t stride = 0;
    for (size_t d = 0; d < x.dim_terms.size(); ++d)
      for (const Access::Term& t : x.dim_terms[d])
        if (t.axis == int(a)) stride += t.coeff * dim_stride[d];
    y.stride[a] = stride;
  }
  return y;
}

AnchorInfo analyze_anchor(const Operator& op) {
  std::vector<te::Tensor> stages = compute_stages(op);
  std::vector<te::Tensor> reductions;
  for (const auto& s : stages)
    if (s.get()->body.get()->as<ReduceNode>()) reductions.push_back(s);
  AnchorInfo info;
  info.stage = reductions.size() == 1 ? reductions[0] : op.outputs[0];
  info.flops = op.flops;
  const TensorNode* node = info.stage.get();
  for (size_t d = 0; d < node->axes.size(); ++d) {
    info.axes.push_back(node->axes[d]);
    info.extents.push_back(node->shape[d]);
  }
  info.num_spatial = int(node->axes.size());
  info.source = node->body;
  if (auto* red = node->body.get()->as<ReduceNode>()) {
    info.is_reduction = true;
    info.reduce_op = red->op;
    info.source = red->source;
    for (const auto& ax : red->axes) {
      info.axes.push_back(ax.var);
      info.extents.push_back(ax.extent);
    }
  }
  for (const Expr& e : info.extents) info.const_extent.push_back(e.as_const_int().value_or(-1));

  visit(info.source, [&](const Expr& e) {
    if (e.get()->as<TensorReadNode>()) {
      info.accesses.push_back(analyze_access(e, info.axes));
      return false;
    }
    return true;
  });

  info.padding = padding_bounds(info);
  info.padded_axes = padded_axes(info);

  const int n = info.num_axes();
  info.output.tensor = info.stage;
  info.output.const_shape = const_shape(info.stage);
  info.output.uses_axis.assign(size_t(n), false);
  info.output.stride.assign(size_t(n), std::nullopt);
  std::optional<int64_t> stride = 1;
  for (int a = info.num_spatial - 1; a >= 0; --a) {
    info.output.uses_axis[size_t(a)] = true;
    info.output.stride[size_t(a)] = stride;
    info.output.dim_terms.insert(info.output.dim_terms.begin(), {Access::Term{a, 1}});
    if (stride && info.const_extent[size_t(a)] > 0) *stride *= info.const_extent[size_t(a)];
    else stride.reset();
  }

  // A fusable consumer: the single stage reading the anchor, element-wise.
  if (info.is_reduction) {
    std::vector<te::Tensor> readers;
    for (const auto& s : stages) {
      bool reads = false;
      visit(s.get()->body, [&](const Expr& e) {
        if (auto* r = e.get()->as<TensorReadNode>()) reads |= r->tensor.get() == node;
        return !reads;
      });
      if (reads) readers.push_back(s);
    }
    bool anchor_is_output = false;
    for (const auto& o : op.outputs) anchor_is_output |= o.get() == node;
    if (readers.size() == 1 && !anchor_is_output && reads_only_at_own_point(readers[0], info.stage))
      info.consumer = readers[0];
  }
  return info;
}

}  // namespace loom
