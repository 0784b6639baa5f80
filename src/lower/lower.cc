#include "lower/lower.h"

#include <unordered_map>

#include "ir/analysis.h"
#include "lower/tiled_nest.h"
#include "schedule/anchor.h"

namespace loom {

namespace {

class Lowerer {
 public:
  Lowerer(const Operator& op, const Schedule& schedule) : op_(op), schedule_(schedule) {}

  LoweredFunc run() {
    LoweredFunc f;
    f.name = op_.name;
    f.size_vars = op_.size_vars;
    for (const auto& t : op_.inputs) f.args.push_back(buffer_for(t));
    for (const auto& t : op_.outputs) f.args.push_back(buffer_for(t));

    std::vector<Stmt> nests;
    std::vector<BufferRef> scratch;
    for (const StageSchedule& s : schedule_.stages) {
      const TensorNode* node = s.tensor.get();
      if (s.fused) continue;  // produced by the anchor's nest
      if (s.state) {
        const StageSchedule* consumer = fused_consumer();
        const te::Tensor& target = consumer ? consumer->tensor : s.tensor;
        if (!buffers_.count(target.get())) scratch.push_back(buffer_for(target));
        nests.push_back(tiled_nest(s, consumer));
        continue;
      }
      Expr body = rewrite(node->body);
      if (s.inlined) {
        inlined_[node] = body;
        continue;
      }
      if (!buffers_.count(node)) scratch.push_back(buffer_for(s.tensor));
      nests.push_back(stage_nest(s, body));
    }
    Stmt body = make_seq(nests);
    for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) body = make_allocate(*it, body);
    f.body = body;
    return f;
  }

 private:
  BufferRef buffer_for(const te::Tensor& t) {
    auto it = buffers_.find(t.get());
    if (it != buffers_.end()) return it->second;
    auto b = std::make_shared<BufferNode>(BufferNode{t.name(), t.dtype(), t.shape()});
    buffers_[t.get()] = b;
    return b;
  }

  // Inlined reads become the producer's body; the rest become flat loads.
  Expr rewrite(const Expr& e) {
    return transform(e, [&](const Expr& x) -> std::optional<Expr> {
      auto* r = x.get()->as<TensorReadNode>();
      if (!r) return std::nullopt;
      const TensorNode* t = r->tensor.get();
      if (auto it = inlined_.find(t); it != inlined_.end()) {
        VarMap map;
        for (size_t d = 0; d < t->axes.size(); ++d) map[t->axes[d].get()] = r->indices[d];
        return substitute(it->second, map);
      }
      return make_load(buffer_for(r->tensor), flatten_index(r->indices, t->shape));
    });
  }

  const StageSchedule* fused_consumer() const {
    for (const StageSchedule& s : schedule_.stages)
      if (s.fused) return &s;
    return nullptr;
  }

  Stmt tiled_nest(const StageSchedule& s, const StageSchedule* consumer) {
    LOOM_INTERNAL_CHECK(schedule_.anchor != nullptr, "a tiled stage without its anchor analysis");
    const AnchorInfo& anchor = *schedule_.anchor;
    LOOM_INTERNAL_CHECK(anchor.stage.get() == s.tensor.get(), "state given to a stage that is not the anchor");
    TiledNestInputs in;
    in.anchor = &anchor;
    in.state = s.state.get();
    in.lower_reads = [this](const Expr& e) { return rewrite(e); };
    in.out = buffer_for(consumer ? consumer->tensor : s.tensor);
    if (consumer) {
      const TensorNode* c = consumer->tensor.get();
      const TensorNode* a = s.tensor.get();
      in.epilogue = [this, c, a](const Expr& value, const std::vector<Expr>& coords) {
        VarMap at;
        for (size_t d = 0; d < c->axes.size(); ++d) at[c->axes[d].get()] = coords[d];
        Expr body = transform(c->body, [&](const Expr& x) -> std::optional<Expr> {
          auto* r = x.get()->as<TensorReadNode>();
          if (r && r->tensor.get() == a) return value;
          return std::nullopt;
        });
        return rewrite(substitute(body, at));
      };
    }
    return lower_tiled_nest(in);
  }

  Stmt stage_nest(const StageSchedule& s, const Expr& body) {
    const TensorNode* node = s.tensor.get();
    const int rank = int(node->axes.size());
    const int fused = s.parallel_axes;

    // The value of each axis inside the nest: its own loop variable, or a
    // piece of the fused parallel variable.
    Var fused_var(node->name + "_outer");
    std::vector<Expr> axis_values(node->axes.begin(), node->axes.end());
    if (fused == 1) fused_var = node->axes[0];
    if (fused > 1) {
      Expr rest = fused_var;
      for (int d = fused - 1; d >= 0; --d) {
        axis_values[d] = d == 0 ? rest : rest % node->shape[d];
        if (d > 0) rest = rest / node->shape[d];
      }
    }
    VarMap at_axes;
    for (int d = 0; d < rank; ++d) at_axes[node->axes[d].get()] = axis_values[d];

    BufferRef out = buffer_for(s.tensor);
    Expr index = flatten_index(axis_values, node->shape);
    Stmt inner;
    if (auto* red = body.get()->as<ReduceNode>()) {
      Expr source = substitute(red->source, at_axes);
      Expr acc = make_load(out, index);
      Expr combined = red->op == ReduceOp::Sum ? acc + source
                      : red->op == ReduceOp::Max ? max(acc, source)
                                                 : min(acc, source);
      Stmt update = make_store(out, index, combined);
      for (auto it = red->axes.rbegin(); it != red->axes.rend(); ++it)
        update = make_for(it->var, it->extent, ForKind::Serial, update);
      inner = make_seq({make_store(out, index, reduce_identity(red->op, red->dtype)), update});
    } else {
      inner = make_store(out, index, substitute(body, at_axes));
    }

    for (int d = rank - 1; d >= fused; --d) {
      bool vec = d == s.vector_axis;
      inner = make_for(node->axes[d], node->shape[d], vec ? ForKind::Vectorized : ForKind::Serial, inner,
                       vec ? s.vector_width : 1);
    }
    if (fused > 0) {
      std::vector<Expr> outer(node->shape.begin(), node->shape.begin() + fused);
      inner = make_for(fused_var, product(outer), ForKind::Parallel, inner);
    }
    return inner;
  }

  const Operator& op_;
  const Schedule& schedule_;
  std::unordered_map<const TensorNode*, BufferRef> buffers_;
  std::unordered_map<const TensorNode*, Expr> inlined_;
};

}  // namespace

LoweredFunc lower(const Operator& op, const Schedule& schedule) { return Lowerer(op, schedule).run(); }

}  // namespace loom
