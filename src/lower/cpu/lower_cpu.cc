#include "lower/lower.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "ir/analysis.h"
#include "lower/cpu/tiled_nest.h"
#include "lower/stage_reads.h"
#include "schedule/anchor.h"
#include "schedule/row_fusion.h"

namespace loom {

namespace {

// The select of an element-wise stage's `body` whose condition does not
// depend on the innermost of its `rank` axes, where that axis has a loop of
// its own (the `fused` leading axes do not); null otherwise.
const SelectNode* guard_of_rows(const Expr& body, int rank, int fused, const std::vector<Var>& axes) {
  const auto* sel = body.get()->as<SelectNode>();
  if (!sel || rank == 0 || rank - 1 < fused || uses_var(sel->cond, axes[size_t(rank - 1)].get())) return nullptr;
  return sel;
}

class Lowerer {
 public:
  Lowerer(const Operator& op, const Schedule& schedule) : op_(op), schedule_(schedule) {}

  LoweredFunc run() {
    LoweredFunc f = function_signature(op_, reads_);
    if (schedule_.row_axes > 0) {
      f.body = fused_rows();
      return f;
    }
    StageBuilders build;
    build.tiled = [this](const StageSchedule& s, const StageSchedule* consumer) { return tiled_nest(s, consumer); };
    build.materialized = [this](const StageSchedule& s, const Expr& body) { return stage_nest(s, body); };
    f.body = lower_stage_by_stage(schedule_, reads_, build);
    return f;
  }

 private:
  BufferRef buffer_for(const te::Tensor& t) { return reads_.buffer_for(t); }
  Expr rewrite(const Expr& e) { return reads_.rewrite(e); }

  Stmt tiled_nest(const StageSchedule& s, const StageSchedule* consumer) {
    LOOM_INTERNAL_CHECK(schedule_.anchor != nullptr, "a tiled stage without its anchor analysis");
    const AnchorInfo& anchor = *schedule_.anchor;
    LOOM_INTERNAL_CHECK(anchor.stage.get() == s.tensor.get(), "state given to a stage that is not the anchor");
    TiledNestInputs in;
    in.anchor = &anchor;
    in.state = s.state.get();
    in.caches = schedule_.cpu_caches;
    in.lower_reads = [this](const Expr& e) { return rewrite(e); };
    in.out = buffer_for(consumer ? consumer->tensor : s.tensor);
    if (consumer) in.epilogue = reads_.epilogue(consumer->tensor, s.tensor);
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
      const std::vector<Expr> outer = unflatten_index(fused_var, {node->shape.begin(), node->shape.begin() + fused});
      std::copy(outer.begin(), outer.end(), axis_values.begin());
    }
    VarMap at_axes;
    for (int d = 0; d < rank; ++d) at_axes[node->axes[d].get()] = axis_values[d];

    BufferRef out = buffer_for(s.tensor);
    Expr index = flatten_index(axis_values, reads_.layout_shape(node));
    auto loop = [&](int d, Stmt body_stmt) {
      const bool vec = d == s.vector_axis;
      return make_for(node->axes[d], node->shape[d], vec ? ForKind::Vectorized : ForKind::Serial,
                      std::move(body_stmt), vec ? s.vector_width : 1);
    };
    Stmt inner;
    int innermost_open = rank - 1;  // the loops from here outward remain to be made
    if (auto* red = body.get()->as<ReduceNode>()) {
      Expr source = substitute(red->source, at_axes);
      Expr acc = make_load(out, index);
      Stmt update = make_store(out, index, reduce_combine(red->op, acc, source));
      for (auto it = red->axes.rbegin(); it != red->axes.rend(); ++it)
        update = make_for(it->var, it->extent, ForKind::Serial, update);
      inner = make_seq({make_store(out, index, reduce_identity(red->op, red->dtype)), update});
    } else if (const SelectNode* row_guard = guard_of_rows(body, rank, fused, node->axes)) {
      // A guard the innermost axis does not move (a padded image's pixel) is
      // tested once per row, each side a plain loop over the row (tested per
      // element, each load's index clamped in range, a 1024-channel image's
      // copy ran 10 instructions per vector).
      const Expr cond = substitute(row_guard->cond, at_axes);
      inner = make_if(cond, loop(rank - 1, make_store(out, index, substitute(row_guard->then_value, at_axes))),
                      loop(rank - 1, make_store(out, index, substitute(row_guard->else_value, at_axes))));
      --innermost_open;
    } else {
      inner = make_store(out, index, substitute(body, at_axes));
    }

    for (int d = innermost_open; d >= fused; --d) inner = loop(d, std::move(inner));
    if (fused > 0) {
      std::vector<Expr> outer(node->shape.begin(), node->shape.begin() + fused);
      inner = make_for(fused_var, product(outer), ForKind::Parallel, inner);
    }
    return inner;
  }

  // Row fusion (schedule/row_fusion.h): one parallel loop over tasks of
  // rows_per_task rows; in each row, every stage in producer order. Outputs
  // are stored in place; the other stages into row-local buffers (the
  // stack when small and of constant size), so nothing of full size is
  // materialized and a row's data stays in L1 between stages. Pipelined,
  // iteration i of a task runs phase p of its row i - p, for every phase
  // whose row is in the task, and each row-local buffer holds one row per
  // phase in flight (slots: the phase count rounded up to a power of two).
  Stmt fused_rows() {
    const int R = schedule_.row_axes;
    const std::vector<Expr>& shape = schedule_.stages.back().tensor.shape();
    const std::vector<Expr> row_shape(shape.begin(), shape.begin() + R);
    const Expr rows = product(row_shape);
    const Expr per_task = make_int(std::max<int64_t>(1, schedule_.rows_per_task));
    std::vector<int> phase = row_phases(schedule_);
    if (!schedule_.row_pipelined) std::fill(phase.begin(), phase.end(), 0);
    const int phases = 1 + *std::max_element(phase.begin(), phase.end());
    const int slots = int(std::bit_ceil(unsigned(phases)));
    Var task("row_task"), in_task("row_in_task");
    const Expr count = min(per_task, rows - Expr(task) * per_task);  // the last task may hold fewer rows
    std::vector<std::vector<Stmt>> by_phase(static_cast<size_t>(phases));
    std::vector<BufferRef> locals;
    for (size_t i = 0; i < schedule_.stages.size(); ++i) {
      const StageSchedule& s = schedule_.stages[i];
      const TensorNode* node = s.tensor.get();
      Expr body = rewrite(node->body);
      if (s.inlined) {
        reads_.inline_stage(node, body);
        continue;
      }
      const Expr row = Expr(task) * per_task + (Expr(in_task) - phase[i]);
      const std::vector<Expr> row_index = unflatten_index(row, row_shape);
      BufferRef out = buffer_for(s.tensor);
      Expr local_base;  // undefined: stored in place, in the whole output
      const bool stored_in_place =
          std::any_of(op_.outputs.begin(), op_.outputs.end(), [&](const te::Tensor& o) { return o.get() == node; });
      if (!stored_in_place) {
        const std::vector<Expr> rest(node->shape.begin() + R, node->shape.end());
        const Expr slot_elems = row_slot_elems(product(rest), node->dtype, schedule_.cpu_caches.line_bytes);
        auto local = std::make_shared<BufferNode>(
            BufferNode{node->name + "_row", node->dtype, {make_int(slots), slot_elems}});
        reads_.read_row_locally(node, local, R, slots);
        locals.push_back(local);
        out = local;
        local_base = row_slot_base({row}, {rows}, slots, slot_elems);
      }
      by_phase[size_t(phase[i])].push_back(row_stage(s, body, row_index, local_base, out));
    }
    Stmt iteration = make_seq(by_phase[0]);
    if (phases > 1) {
      std::vector<Stmt> guarded;
      for (int p = 0; p < phases; ++p) {
        Expr in_range = Expr(in_task) < count + p;
        if (p > 0) in_range = Expr(in_task) >= make_int(p) && in_range;
        guarded.push_back(make_if(in_range, make_seq(by_phase[size_t(p)])));
      }
      iteration = make_seq(guarded);
    }
    Stmt task_body = make_for(in_task, count + (phases - 1), ForKind::Serial, iteration);
    for (auto it = locals.rbegin(); it != locals.rend(); ++it) {
      auto n = product((*it)->shape).as_const_int();
      const bool small = n && *n * (*it)->dtype.bytes() <= kStackRowBytes;
      task_body = make_allocate(*it, task_body, small ? MemScope::Stack : MemScope::Heap);
    }
    return make_for(task, (rows + per_task - 1) / per_task, ForKind::Parallel, task_body);
  }

  // One stage over one row: loops over its axes after the row axes, the
  // innermost vectorized; a reduction accumulates in vector lanes over its
  // innermost reduction axis, then combines the lanes.
  Stmt row_stage(const StageSchedule& s, const Expr& body, const std::vector<Expr>& row_index, const Expr& local_base,
                 const BufferRef& out) {
    const bool in_place = !local_base.defined();
    const TensorNode* node = s.tensor.get();
    const size_t R = row_index.size(), rank = node->axes.size();
    VarMap at;
    for (size_t d = 0; d < R; ++d) at[node->axes[d].get()] = row_index[d];
    // In place: the element's index in the whole tensor; else in the row.
    std::vector<Expr> coords(node->axes.begin(), node->axes.end());
    for (size_t d = 0; d < R; ++d) coords[d] = row_index[d];
    Expr index = in_place ? flatten_index(coords, node->shape)
                          : local_base + flatten_index({coords.begin() + R, coords.end()},
                                                       {node->shape.begin() + R, node->shape.end()});
    const int W = std::max(1, s.vector_width);
    const auto* red = body.get()->as<ReduceNode>();
    Stmt inner = red ? row_reduction(*red, substitute(red->source, at), std::max(1, s.reduce_width),
                                     std::max(1, s.accumulators), out, index)
                     : make_store(out, index, substitute(body, at));
    for (size_t d = rank; d-- > R;) {
      const bool vec = d + 1 == rank && W > 1 && !red;
      inner = make_for(node->axes[d], node->shape[d], vec ? ForKind::Vectorized : ForKind::Serial, inner,
                       vec ? W : 1, 0, /*masked_remainder=*/vec);
    }
    return inner;
  }

  // A reduction of one row into out[index]: U x W lane-wise partial results
  // (U independent vectors hide the combine's latency) over blocks of the
  // innermost reduction axis, then its remainder, the outer reduction axes
  // serial around both; then the lanes combined.
  Stmt row_reduction(const ReduceNode& red, const Expr& source, int W, int U, const BufferRef& out,
                     const Expr& index) {
    const int lanes = W * U;
    auto acc = std::make_shared<BufferNode>(BufferNode{"row_acc", red.dtype, {make_int(lanes)}});
    auto combine = [&](const Expr& x, const Expr& y) { return reduce_combine(red.op, x, y); };
    Var q("q");
    Stmt init = make_for(q, make_int(lanes), ForKind::Serial, make_store(acc, q, reduce_identity(red.op, red.dtype)));
    const Var& k = red.axes.back().var;
    const Expr& K = red.axes.back().extent;
    auto accumulate = [&](const Expr& lane, const Expr& at_k) {
      VarMap m{{k.get(), at_k}};
      return make_store(acc, lane, combine(make_load(acc, lane), substitute(source, m)));
    };
    // Once per row: a partial vector runs masked (ForNode::masked_remainder).
    auto lanes_loop = [&](const Var& v, const Expr& extent, const Stmt& body) {
      return W > 1 ? make_for(v, extent, ForKind::Vectorized, body, W, 0, /*masked_remainder=*/true)
                   : make_for(v, extent, ForKind::Serial, body);
    };
    Var b("rb"), u("ru"), l("rl"), t("rt");
    Stmt step = lanes_loop(l, make_int(W), accumulate(Expr(u) * W + l, (Expr(b) * U + u) * W + l));
    step = make_for(u, make_int(U), U > 1 ? ForKind::Unrolled : ForKind::Serial, step);
    const Expr done = K / lanes * lanes;
    // The remainder (fewer than U x W elements) into lanes 0, 1, ...
    Stmt update = make_seq({make_for(b, K / lanes, ForKind::Serial, step),
                            lanes_loop(t, K - done, accumulate(t, done + t))});
    for (size_t a = red.axes.size() - 1; a-- > 0;)
      update = make_for(red.axes[a].var, red.axes[a].extent, ForKind::Serial, update);
    // Lanes combined in place in halves, each halving one vectorized loop:
    // the U vectors first, whole vectors onto whole vectors, then within
    // one vector at narrower widths. A tree of depth log2(lanes) made of
    // vector operations, not of scalars, whose loads start where a vector
    // was stored (a load straddling two stores waits for both to retire).
    std::vector<Stmt> tree;
    auto halve = [&](int n, int unit) {
      const int half = (n + 1) / 2;
      Var h("rh");
      Stmt halving = make_store(acc, h, combine(make_load(acc, h), make_load(acc, Expr(h) + half * unit)));
      tree.push_back(lanes_loop(h, make_int((n - half) * unit), halving));
    };
    for (int n = U; n > 1; n = (n + 1) / 2) halve(n, W);
    for (int n = W; n > 1; n = (n + 1) / 2) halve(n, 1);
    Stmt result = make_store(out, index, make_load(acc, make_int(0)));
    return make_allocate(acc, make_seq({init, update, make_seq(tree), result}), MemScope::Stack);
  }

  static constexpr int64_t kStackRowBytes = 16 << 10;

  const Operator& op_;
  const Schedule& schedule_;
  StageReads reads_;
};

}  // namespace

LoweredFunc lower_cpu(const Operator& op, const Schedule& schedule) { return Lowerer(op, schedule).run(); }

}  // namespace loom
