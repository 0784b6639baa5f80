#include "lower/stage_reads.h"

#include "ir/analysis.h"

namespace loom {

BufferRef StageReads::buffer_for(const te::Tensor& t) {
  auto it = buffers_.find(t.get());
  if (it != buffers_.end()) return it->second;
  auto b = std::make_shared<BufferNode>(BufferNode{t.name(), t.dtype(), layout_shape(t.get())});
  buffers_[t.get()] = b;
  return b;
}

std::vector<Expr> StageReads::layout_shape(const TensorNode* t) const {
  std::vector<Expr> shape = t->shape;
  if (auto it = row_pitch_.find(t); it != row_pitch_.end() && !shape.empty()) shape.back() = make_int(it->second);
  return shape;
}

void StageReads::read_row_locally(const TensorNode* t, BufferRef row, int row_axes, int slots) {
  row_local_[t] = RowLocal{std::move(row), row_axes, slots};
}

Expr row_slot_base(const std::vector<Expr>& row, const std::vector<Expr>& row_shape, int slots,
                   const Expr& slot_elems) {
  if (slots == 1) return make_int(0);
  return flatten_index(row, row_shape) % make_int(slots) * slot_elems;
}

Expr row_slot_elems(const Expr& row_elems, DType type, int line_bytes) {
  const int64_t line = std::max<int64_t>(1, line_bytes / std::max(1, type.bytes()));
  return (row_elems + (line - 1)) / line * line;
}

Expr StageReads::rewrite(const Expr& e) {
  return transform(e, [&](const Expr& x) -> std::optional<Expr> {
    auto* r = x.get()->as<TensorReadNode>();
    if (!r) return std::nullopt;
    const TensorNode* t = r->tensor.get();
    if (auto it = inlined_.find(t); it != inlined_.end()) {
      VarMap map;
      for (size_t d = 0; d < t->axes.size(); ++d) map[t->axes[d].get()] = r->indices[d];
      return substitute(it->second, map);
    }
    if (auto it = row_local_.find(t); it != row_local_.end()) {  // this row's part of a fused stage
      const RowLocal& local = it->second;
      const auto rows = r->indices.begin() + local.row_axes;
      const std::vector<Expr> rest_shape(t->shape.begin() + local.row_axes, t->shape.end());
      const Expr base = row_slot_base({r->indices.begin(), rows}, {t->shape.begin(), t->shape.begin() + local.row_axes},
                                      local.slots, local.buffer->shape.back());
      return make_load(local.buffer, base + flatten_index({rows, r->indices.end()}, rest_shape));
    }
    return make_load(buffer_for(r->tensor), flatten_index(r->indices, layout_shape(t)));
  });
}

StageReads::Epilogue StageReads::epilogue(const te::Tensor& consumer, const te::Tensor& anchor) {
  const TensorNode* c = consumer.get();
  const TensorNode* a = anchor.get();
  return [this, c, a](const Expr& value, const std::vector<Expr>& coords) {
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

const StageSchedule* fused_consumer(const Schedule& schedule) {
  for (const StageSchedule& s : schedule.stages)
    if (s.fused) return &s;
  return nullptr;
}

LoweredFunc function_signature(const Operator& op, StageReads& reads) {
  LoweredFunc f;
  f.name = op.name;
  f.size_vars = op.size_vars;
  for (const auto& t : op.inputs) f.args.push_back(reads.buffer_for(t));
  for (const auto& t : op.outputs) f.args.push_back(reads.buffer_for(t));
  return f;
}

Stmt lower_stage_by_stage(const Schedule& schedule, StageReads& reads, const StageBuilders& build) {
  std::vector<Stmt> code;
  std::vector<BufferRef> scratch;
  for (const StageSchedule& s : schedule.stages) {
    const TensorNode* node = s.tensor.get();
    if (s.fused) continue;  // computed in the anchor's write-back
    if (s.state) {
      const StageSchedule* consumer = fused_consumer(schedule);
      const te::Tensor& target = consumer ? consumer->tensor : s.tensor;
      if (!reads.has_buffer(target.get())) scratch.push_back(reads.buffer_for(target));
      code.push_back(build.tiled(s, consumer));
      continue;
    }
    Expr body = reads.rewrite(node->body);
    if (s.inlined) {
      reads.inline_stage(node, body);
      continue;
    }
    if (!reads.has_buffer(node)) {
      if (s.row_pitch > 0) reads.set_row_pitch(node, s.row_pitch);
      scratch.push_back(reads.buffer_for(s.tensor));
    }
    code.push_back(build.materialized(s, body));
  }
  Stmt body = make_seq(code);
  for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) body = make_allocate(*it, body);
  return body;
}

}  // namespace loom
