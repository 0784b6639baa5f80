#include "schedule/collapse_axes.h"

#include <functional>
#include <optional>
#include <unordered_map>

#include "ir/analysis.h"
#include "schedule/schedule.h"

namespace loom {

namespace {

using TensorMap = std::unordered_map<const TensorNode*, te::Tensor>;

// A compute stage's new definition.
struct StageDef {
  std::vector<Var> axes;
  std::vector<Expr> shape;
  Expr body;
};
// The new definition of a stage, whose reads of earlier tensors are to point at `rebuilt`; nullopt refuses.
using StageRewrite = std::function<std::optional<StageDef>(const TensorNode& stage, const TensorMap& rebuilt)>;

te::Tensor with_shape(const TensorNode& old, std::vector<Expr> shape) {
  auto node = std::make_shared<TensorNode>(old);
  node->shape = std::move(shape);
  return te::Tensor(node);
}

// `op` with every compute stage redefined by `rewrite`, producers first, and
// its placeholders replaced as `rebuilt` says; nullopt when a stage refuses.
std::optional<Operator> rebuild(const Operator& op, TensorMap rebuilt, const StageRewrite& rewrite) {
  for (const te::Tensor& stage : compute_stages(op)) {
    std::optional<StageDef> def = rewrite(*stage.get(), rebuilt);
    if (!def) return std::nullopt;
    auto node = std::make_shared<TensorNode>(*stage.get());
    node->axes = std::move(def->axes);
    node->shape = std::move(def->shape);
    node->body = std::move(def->body);
    rebuilt[stage.get()] = te::Tensor(node);
  }
  Operator out = op;
  for (te::Tensor& t : out.inputs)
    if (auto it = rebuilt.find(t.get()); it != rebuilt.end()) t = it->second;
  for (te::Tensor& t : out.outputs) t = rebuilt.at(t.get());
  return out;
}

// `body` with its reads redirected to the rebuilt tensors, same indices.
Expr redirect_reads(const Expr& body, const TensorMap& rebuilt) {
  return transform(body, [&](const Expr& e) -> std::optional<Expr> {
    const auto* r = e.get()->as<TensorReadNode>();
    if (!r) return std::nullopt;
    auto it = rebuilt.find(r->tensor.get());
    if (it == rebuilt.end()) return std::nullopt;
    return it->second(r->indices);
  });
}

// Reductions over one element lose that axis (its index is 0); one axis stays.
std::optional<Operator> drop_unit_reduce_axes(const Operator& op) {
  bool dropped = false;
  std::optional<Operator> out = rebuild(op, {}, [&](const TensorNode& stage, const TensorMap& rebuilt) {
    StageDef def{stage.axes, stage.shape, redirect_reads(stage.body, rebuilt)};
    const auto* red = def.body.get()->as<ReduceNode>();
    if (!red) return std::optional<StageDef>(def);
    std::vector<te::IterVar> kept;
    VarMap zero;
    for (size_t i = 0; i < red->axes.size(); ++i) {
      const bool last_left = kept.empty() && i + 1 == red->axes.size();
      if (red->axes[i].extent.as_const_int() == 1 && !last_left) zero[red->axes[i].var.get()] = make_int(0);
      else kept.push_back(red->axes[i]);
    }
    if (zero.empty()) return std::optional<StageDef>(def);
    dropped = true;
    def.body = make_reduce(red->op, substitute(red->source, zero), kept);
    return std::optional<StageDef>(def);
  });
  return dropped ? out : std::nullopt;
}

// Whether every compute stage has the first output's shape, constant: the
// stages then share one iteration space whose axes can merge together.
bool stages_share_constant_shape(const Operator& op) {
  const std::vector<Expr>& shape = op.outputs[0].shape();
  for (const te::Tensor& stage : compute_stages(op)) {
    if (stage.shape().size() != shape.size()) return false;
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::optional<int64_t> extent = stage.shape()[d].as_const_int();
      if (!extent || extent != shape[d].as_const_int()) return false;
    }
  }
  return true;
}

// Per tensor, the dimension j whose pair (j, j+1) merges: the stages' own at
// d, and every dimension pair a read indexes with both axes d and d+1
// (nullopt when two reads of a tensor disagree).
std::optional<std::unordered_map<const TensorNode*, int>> dims_to_merge(const Operator& op, int d) {
  std::unordered_map<const TensorNode*, int> merge;
  const std::vector<te::Tensor> stages = compute_stages(op);
  for (const te::Tensor& stage : stages) merge[stage.get()] = d;
  bool agree = true;
  for (const te::Tensor& stage : stages) {
    const Var& a = stage.get()->axes[size_t(d)];
    const Var& b = stage.get()->axes[size_t(d) + 1];
    visit(stage.get()->body, [&](const Expr& e) {
      const auto* r = e.get()->as<TensorReadNode>();
      if (!r) return true;
      std::vector<int> dims;
      for (size_t i = 0; i < r->indices.size(); ++i)
        if (uses_var(r->indices[i], a.get()) || uses_var(r->indices[i], b.get())) dims.push_back(int(i));
      if (dims.size() == 2 && dims[1] == dims[0] + 1)
        agree &= merge.emplace(r->tensor.get(), dims[0]).first->second == dims[0];
      return true;
    });
  }
  if (!agree) return std::nullopt;
  return merge;
}

Expr times(Expr x, Expr y) { return x * y; }

std::vector<Expr> merge_pair(std::vector<Expr> list, int j, const std::function<Expr(Expr, Expr)>& combine) {
  list[size_t(j)] = combine(list[size_t(j)], list[size_t(j) + 1]);
  list.erase(list.begin() + j + 1);
  return list;
}

// `op` with output axes d and d+1 merged into one, when every read indexes
// them as a run in one dimension (after merging that tensor's dimension
// pair, if it has to): coefficient of axis d = extent of d+1 x coefficient
// of d+1. Nullopt otherwise.
std::optional<Operator> merge_axes(const Operator& op, int d) {
  const auto merge = dims_to_merge(op, d);
  if (!merge) return std::nullopt;
  TensorMap rebuilt;
  for (const te::Tensor& t : op.inputs)
    if (auto it = merge->find(t.get()); it != merge->end())
      rebuilt[t.get()] = with_shape(*t.get(), merge_pair(t.shape(), it->second, times));
  return rebuild(op, rebuilt, [&](const TensorNode& stage, const TensorMap& done) -> std::optional<StageDef> {
    const Var& a = stage.axes[size_t(d)];
    const Var& b = stage.axes[size_t(d) + 1];
    const int64_t inner = *stage.shape[size_t(d) + 1].as_const_int();
    const Var merged(a.name() + b.name());
    const VarMap zero = {{a.get(), make_int(0)}, {b.get(), make_int(0)}};
    bool ok = true;
    Expr body = transform(stage.body, [&](const Expr& e) -> std::optional<Expr> {
      const auto* r = e.get()->as<TensorReadNode>();
      if (!r || !ok) return std::nullopt;
      std::vector<Expr> idx = r->indices;
      if (auto it = merge->find(r->tensor.get()); it != merge->end()) {
        const Expr extent = r->tensor.shape()[size_t(it->second) + 1];
        idx = merge_pair(idx, it->second, [&](Expr x, Expr y) { return x * extent + y; });
      }
      int moving = 0;
      for (Expr& i : idx) {
        if (!uses_var(i, a.get()) && !uses_var(i, b.get())) continue;
        const std::optional<int64_t> ca = linear_coeff(i, a.get()), cb = linear_coeff(i, b.get());
        ok &= ++moving == 1 && ca && cb && *cb != 0 && *ca == inner * *cb;
        if (ok) i = substitute(i, zero) + make_int(*cb) * merged;
      }
      auto it = done.find(r->tensor.get());
      return ok ? (it != done.end() ? it->second : r->tensor)(idx) : e;
    });
    if (!ok || uses_var(body, a.get()) || uses_var(body, b.get())) return std::nullopt;
    StageDef def{stage.axes, merge_pair(stage.shape, d, times), body};
    def.axes[size_t(d)] = merged;
    def.axes.erase(def.axes.begin() + d + 1);
    return def;
  });
}

}  // namespace

Operator collapse_axes(const Operator& op) {
  Operator out = drop_unit_reduce_axes(op).value_or(op);
  if (out.outputs.empty() || !stages_share_constant_shape(out)) return out;
  for (bool merged = true; merged;) {
    merged = false;
    for (int d = out.outputs[0].ndim() - 2; d >= 0 && !merged; --d) {
      if (std::optional<Operator> m = merge_axes(out, d)) {
        out = *std::move(m);
        merged = true;
      }
    }
  }
  return out;
}

}  // namespace loom
