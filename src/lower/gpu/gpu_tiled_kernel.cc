#include "lower/gpu/gpu_tiled_kernel.h"

#include "ir/analysis.h"
#include "schedule/gpu_tiles.h"

namespace loom {

namespace {

Expr all_of(const std::vector<Expr>& conds) {
  Expr c;
  for (const Expr& x : conds) c = c.defined() ? (c && x) : x;
  return c;
}

Stmt guarded(const std::vector<Expr>& conds, Stmt body) {
  Expr c = all_of(conds);
  return c.defined() ? make_if(c, std::move(body)) : body;
}

// True when tiles of `tile` may overrun `extent` (it does not divide a constant extent, or the extent is symbolic).
bool may_overrun(const Expr& extent, int64_t tile) {
  auto n = extent.as_const_int();
  return !n || *n % tile != 0;
}

class GpuTiledKernel {
 public:
  explicit GpuTiledKernel(const GpuTiledInputs& in)
      : in_(in), an_(*in.anchor), s_(*in.state), g_(GpuTiles::of(s_, an_)), bid_("block"), tid_("thread") {}

  Stmt build() {
    const int n = an_.num_axes();
    base_.assign(size_t(n), make_int(0));
    thread_coord_.assign(size_t(n), make_int(0));
    block_coords();
    thread_coords();
    // Per output of the thread: a vthread index and an offset in the thread tile per spatial axis.
    for (int a = 0; a < an_.num_spatial; ++a) {
      vt_.emplace_back("v" + std::to_string(a));
      el_.emplace_back("e" + std::to_string(a));
    }
    Stmt body = an_.is_reduction ? reduction_body() : element_body();
    return make_gpu_launch(in_.name, grid_, int(g_.threads), bid_, tid_, body);
  }

 private:
  // Block index -> block coordinates, over the spatial axes in the level-0 order (the last fastest).
  void block_coords() {
    std::vector<Expr> counts;
    std::vector<int> axes(s_.order[0].begin(), s_.order[0].end());
    for (int a : axes) counts.push_back((an_.extents[a] + (g_.block[a] - 1)) / g_.block[a]);
    grid_ = product(counts);
    std::vector<Expr> coords = unflatten_index(bid_, counts);
    for (size_t i = 0; i < axes.size(); ++i) base_[axes[i]] = coords[i] * g_.block[axes[i]];
  }

  // Thread index -> thread coordinates, over the spatial axes in the thread level's order (the last fastest).
  void thread_coords() {
    std::vector<Expr> counts;
    std::vector<int> axes;
    for (int a : s_.order[s_.reg_level()])
      if (!an_.is_reduce_axis(a)) {
        axes.push_back(a);
        counts.push_back(make_int(g_.threads_along[a]));
      }
    std::vector<Expr> coords = unflatten_index(tid_, counts);
    for (size_t i = 0; i < axes.size(); ++i) thread_coord_[axes[i]] = coords[i];
  }

  // An output's offset in the block along spatial axis a.
  Expr local_spatial(int a) const {
    return Expr(vt_[a]) * (g_.block[a] / g_.vthreads[a]) + thread_coord_[a] * g_.thread_tile[a] + Expr(el_[a]);
  }

  // Loops over the thread's outputs (unrolled: accumulator indices become constants) around `body`.
  Stmt over_outputs(Stmt body) const {
    for (int a = an_.num_spatial - 1; a >= 0; --a) {
      body = make_for(el_[a], make_int(g_.thread_tile[a]), ForKind::Unrolled, body);
      body = make_for(vt_[a], make_int(g_.vthreads[a]), ForKind::Unrolled, body);
    }
    return body;
  }

  Expr accumulator_index() const {
    std::vector<Expr> idx, shape;
    for (int a = 0; a < an_.num_spatial; ++a) {
      idx.push_back(Expr(vt_[a]) * g_.thread_tile[a] + Expr(el_[a]));
      shape.push_back(make_int(g_.vthreads[a] * g_.thread_tile[a]));
    }
    return flatten_index(idx, shape);
  }

  // Guards keeping an output inside the iteration space.
  std::vector<Expr> output_guards() const {
    std::vector<Expr> conds;
    for (int a = 0; a < an_.num_spatial; ++a)
      if (may_overrun(an_.extents[a], g_.block[a])) conds.push_back(base_[a] + local_spatial(a) < an_.extents[a]);
    return conds;
  }

  std::vector<Expr> output_coords() const {
    std::vector<Expr> coords;
    for (int a = 0; a < an_.num_spatial; ++a) coords.push_back(base_[a] + local_spatial(a));
    return coords;
  }

  VarMap axes_at(const std::vector<Expr>& values) const {
    VarMap m;
    for (size_t a = 0; a < values.size(); ++a) m[an_.axes[a].get()] = values[a];
    return m;
  }

  Stmt write_back(const Expr& value) const {
    const std::vector<Expr> coords = output_coords();
    Expr v = in_.epilogue ? in_.epilogue(value, coords) : value;
    const std::vector<Expr>& shape = in_.out->shape;
    return guarded(output_guards(), make_store(in_.out, flatten_index(coords, shape), v));
  }

  Stmt element_body() {
    VarMap at = axes_at(output_coords());
    Expr value = in_.reads->rewrite(substitute(an_.source, at));
    return over_outputs(write_back(value));
  }

  Stmt reduction_body() {
    const int n = an_.num_axes();
    const DType t = an_.stage.dtype();
    acc_ = std::make_shared<BufferNode>(BufferNode{an_.stage.name() + "_acc", t, {make_int(g_.per_thread)}});
    Stmt init = over_outputs(make_store(acc_, accumulator_index(), reduce_identity(an_.reduce_op, t)));

    // Reduction steps, in the level-1 order of the reduction axes; the step's own loops inside.
    std::vector<int> raxes;
    for (int a : s_.order[1])
      if (an_.is_reduce_axis(a)) raxes.push_back(a);
    std::vector<Var> step_var, in_step;
    for (int a : raxes) {
      step_var.emplace_back("k" + std::to_string(a));
      in_step.emplace_back("kk" + std::to_string(a));
    }
    std::vector<Expr> step_base(static_cast<size_t>(n), make_int(0)), reduce_value(static_cast<size_t>(n));
    for (size_t i = 0; i < raxes.size(); ++i) {
      step_base[raxes[i]] = Expr(step_var[i]) * g_.step[raxes[i]];
      reduce_value[raxes[i]] = step_base[raxes[i]] + Expr(in_step[i]);
    }

    // Staged accesses: a shared buffer each, filled at every step.
    std::vector<Stmt> fills;
    std::unordered_map<const ExprNode*, Expr> staged_read;  // the access's read -> its shared load
    for (int i = 0; i < int(an_.accesses.size()); ++i) {
      if (s_.pack[size_t(i)] < 0) continue;
      const std::vector<int> axes = g_.staged_axes(an_, i);
      const std::vector<int64_t> extents = g_.staged_extents(an_, i);
      const std::vector<int64_t> layout = g_.staged_layout(an_, i, in_.banks);
      std::vector<Expr> layout_e;
      for (int64_t e : layout) layout_e.push_back(make_int(e));
      int64_t elems = 1, padded = 1;
      for (size_t d = 0; d < extents.size(); ++d) {
        elems *= extents[d];
        padded *= layout[d];
      }
      auto buf = std::make_shared<BufferNode>(
          BufferNode{"s_" + an_.accesses[size_t(i)].tensor.name() + std::to_string(i), t, {make_int(padded)}});
      shared_.push_back(buf);
      fills.push_back(fill(i, buf, axes, extents, layout_e, elems, step_base));
      // Where the thread's output and the step's position read it.
      std::vector<Expr> local;
      for (int a : axes) {
        if (an_.is_reduce_axis(a)) {
          size_t pos = 0;
          while (raxes[pos] != a) ++pos;
          local.push_back(Expr(in_step[pos]));
        } else {
          local.push_back(local_spatial(a));
        }
      }
      staged_read[an_.accesses[size_t(i)].read.get()] = make_load(buf, flatten_index(local, layout_e));
    }

    // The step's reduction: every output of the thread takes one term per position in the step.
    Expr source = transform(an_.source, [&](const Expr& x) -> std::optional<Expr> {
      auto it = staged_read.find(x.get());
      if (it == staged_read.end()) return std::nullopt;
      return it->second;
    });
    std::vector<Expr> coords = output_coords();
    coords.resize(static_cast<size_t>(n));
    for (int a : raxes) coords[a] = reduce_value[a];
    Expr term = in_.reads->rewrite(substitute(source, axes_at(coords)));
    Expr acc_i = accumulator_index();
    Stmt update = over_outputs(guarded(output_guards(), make_store(acc_, acc_i, reduce_combine(an_.reduce_op,
                                                                                               make_load(acc_, acc_i),
                                                                                               term))));
    for (size_t i = raxes.size(); i-- > 0;) {
      const int a = raxes[i];
      // The last step may be short.
      Expr count = may_overrun(an_.extents[a], g_.step[a])
                       ? min(make_int(g_.step[a]), an_.extents[a] - step_base[a])
                       : make_int(g_.step[a]);
      const bool innermost = i + 1 == raxes.size();
      update = make_for(in_step[i], count, ForKind::Serial, update, 1, innermost && s_.unroll > 1 ? s_.unroll : 0);
    }
    // The step's first barrier also keeps the previous step's reads before this step's copies (and OpenCL
    // implementations that run work-groups on a CPU, PoCL, need a loop with barriers to start with one).
    Stmt step = fills.empty() ? update : make_seq({make_barrier(), make_seq(fills), make_barrier(), update});
    for (size_t i = raxes.size(); i-- > 0;) {
      const int a = raxes[i];
      step = make_for(step_var[i], (an_.extents[a] + (g_.step[a] - 1)) / g_.step[a], ForKind::Serial, step);
    }
    Stmt body = make_seq({init, step, over_outputs(write_back(make_load(acc_, accumulator_index())))});
    body = make_allocate(acc_, body, MemScope::Local);
    for (auto it = shared_.rbegin(); it != shared_.rend(); ++it) body = make_allocate(*it, body, MemScope::Shared);
    return body;
  }

  // The block's threads copy access i's tile for this step into `buf`,
  // element j of the tile by thread j mod threads (neighbours copy
  // neighbours); in groups of kVector consecutive elements (one vector load
  // each) when vector_width() allows.
  Stmt fill(int i, const BufferRef& buf, const std::vector<int>& axes, const std::vector<int64_t>& extents,
            const std::vector<Expr>& layout, int64_t elems, const std::vector<Expr>& step_base) {
    const int width = vector_width(i, axes, extents);
    Var round("fill" + std::to_string(i)), lane("lane" + std::to_string(i));
    Expr j = Expr(round) * g_.threads + Expr(tid_);
    std::vector<Expr> groups;
    for (int64_t e : extents) groups.push_back(make_int(e));
    groups.back() = make_int(extents.back() / width);
    std::vector<Expr> local = unflatten_index(j, groups);
    if (width > 1) local.back() = local.back() * width + Expr(lane);
    std::vector<Expr> values(static_cast<size_t>(an_.num_axes()), make_int(0));
    std::vector<Expr> inside;
    for (size_t d = 0; d < axes.size(); ++d) {
      const int a = axes[d];
      const bool reduce = an_.is_reduce_axis(a);
      values[a] = (reduce ? step_base[a] : base_[a]) + local[d];
      if (may_overrun(an_.extents[a], reduce ? g_.step[a] : g_.block[a])) inside.push_back(values[a] < an_.extents[a]);
    }
    const Access& x = an_.accesses[size_t(i)];
    // An index that is not affine with nonnegative coefficients (conv2d_transpose's (oh + pad - kh) / stride)
    // leaves the tensor at tile positions the source's own select discards: the copy loads only inside it.
    if (!x.affine)
      for (size_t d = 0; d < x.indices.size(); ++d) {
        const Expr at = substitute(x.indices[d], axes_at(values));
        inside.push_back(at >= make_int(0));
        inside.push_back(at < x.tensor.shape()[d]);
      }
    Expr value = in_.reads->rewrite(substitute(x.read, axes_at(values)));
    Expr c = all_of(inside);
    if (c.defined()) value = select(c, value, make_float(0.0, x.read.dtype()));
    Stmt copy = make_store(buf, flatten_index(local, layout), value);
    if (width > 1) copy = make_for(lane, make_int(width), ForKind::Vectorized, copy, width);
    const int64_t count = elems / width, rounds = (count + g_.threads - 1) / g_.threads;
    if (count % g_.threads) copy = make_if(j < make_int(count), copy);
    return make_for(round, make_int(rounds), ForKind::Serial, copy);
  }

  // kVector when access i's copy can load that many consecutive elements at
  // once, aligned: an unguarded read, unit stride along the tile's innermost
  // axis, tiles of whole vectors that never cross an extent, and every other
  // term of the flat offset a multiple of the vector; else 1.
  int vector_width(int i, const std::vector<int>& axes, const std::vector<int64_t>& extents) const {
    const Access& x = an_.accesses[size_t(i)];
    const int last = axes.back();
    if (x.guarded || !x.stride[size_t(last)] || *x.stride[size_t(last)] != 1 || extents.back() % kVector) return 1;
    for (int a : axes) {
      auto e = an_.extents[a].as_const_int();
      const int64_t tile = an_.is_reduce_axis(a) ? g_.step[a] : g_.block[a];
      if (!e || *e % tile) return 1;  // partial tiles would need per-lane guards
      if (a != last && (!x.stride[size_t(a)] || *x.stride[size_t(a)] % kVector)) return 1;
    }
    VarMap at_origin;
    for (const Var& v : an_.axes) at_origin[v.get()] = make_int(0);
    auto origin = substitute(flatten_index(x.indices, x.tensor.shape()), at_origin).as_const_int();
    return origin && *origin % kVector == 0 ? kVector : 1;
  }

  static constexpr int kVector = 4;

  const GpuTiledInputs& in_;
  const AnchorInfo& an_;
  const StateData& s_;
  const GpuTiles g_;
  Var bid_, tid_;
  Expr grid_;
  std::vector<Expr> base_, thread_coord_;
  std::vector<Var> vt_, el_;
  BufferRef acc_;
  std::vector<BufferRef> shared_;
};

}  // namespace

Stmt lower_gpu_tiled_kernel(const GpuTiledInputs& in) { return GpuTiledKernel(in).build(); }

}  // namespace loom
