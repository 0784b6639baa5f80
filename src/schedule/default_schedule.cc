#include <algorithm>
#include <numeric>
#include <sstream>
#include <unordered_set>

#include "ir/analysis.h"
#include "schedule/anchor.h"
#include "schedule/row_fusion.h"
#include "schedule/schedule.h"
#include "schedule/task.h"

namespace loom {

namespace {

void topo_visit(const te::Tensor& t, std::unordered_set<const TensorNode*>& seen, std::vector<te::Tensor>& order) {
  if (t.is_placeholder() || !seen.insert(t.get()).second) return;
  visit(t.get()->body, [&](const Expr& e) {
    if (auto* r = e.get()->as<TensorReadNode>()) topo_visit(r->tensor, seen, order);
    return true;
  });
  order.push_back(t);
}

bool is_output(const Operator& op, const te::Tensor& t) {
  for (const auto& o : op.outputs)
    if (o.get() == t.get()) return true;
  return false;
}

}  // namespace

int64_t scratch_row_pitch(int64_t row_elems, int elem_bytes, const CpuCaches& caches) {
  const int64_t row_bytes = row_elems * elem_bytes, line = caches.line_bytes;
  if (line <= 0 || row_bytes % line != 0 || row_bytes == 0 || caches.l1_sets <= 0 || line % elem_bytes != 0)
    return row_elems;
  return 2 * l1_sets_reached(row_bytes / line, caches) <= caches.l1_ways ? row_elems + line / elem_bytes : row_elems;
}

int64_t materialized_row_pitch(const Access& x, const CpuCaches& caches) {
  if (x.const_shape.empty()) return 0;
  const int64_t row = x.const_shape.back(), pitch = scratch_row_pitch(row, x.tensor.dtype().bytes(), caches);
  return pitch == row ? 0 : pitch;
}

int vector_width_for(const Expr& extent, int lanes) {
  auto n = extent.as_const_int();
  if (!n || *n >= lanes) return lanes;
  int w = 1;
  while (w * 2 <= *n) w *= 2;
  return w >= 4 ? w : 1;
}

std::vector<te::Tensor> compute_stages(const Operator& op) {
  std::unordered_set<const TensorNode*> seen;
  std::vector<te::Tensor> order;
  for (const auto& o : op.outputs) {
    LOOM_USER_CHECK(!o.is_placeholder(), op.name, ": output '", o.name(), "' is an input placeholder");
    topo_visit(o, seen, order);
  }
  return order;
}

std::string Schedule::str() const {
  std::ostringstream os;
  if (row_axes > 0)
    os << "row-fused over " << row_axes << " leading axes, " << rows_per_task << " rows per parallel task"
       << (row_pipelined ? ", phases of consecutive rows overlapped" : "") << "\n";
  for (const auto& s : stages) {
    os << s.tensor.name() << ": ";
    if (s.inlined || s.fused) {
      os << (s.inlined ? "inline\n" : "fused into the anchor's write-back\n");
      continue;
    }
    if (s.state) {
      os << "tiled " << s.state->str() << "\n";
      continue;
    }
    os << "parallel " << s.parallel_axes << " outer axes";
    if (s.vector_axis >= 0) os << ", vectorize axis " << s.vector_axis << " x" << s.vector_width;
    os << "\n";
  }
  return os.str();
}

int64_t l1_sets_reached(int64_t lines_apart, const CpuCaches& caches) {
  const int64_t sets = std::max(1, caches.l1_sets);
  return sets / std::gcd(lines_apart, sets);
}

CpuCaches cpu_caches_of(const CpuSpec& cpu) {
  CpuCaches c;
  c.fma_chains = std::max(1, cpu.fma_latency * cpu.fma_units);
  c.vector_registers = cpu.vector_registers;
  if (cpu.caches.empty()) return c;
  const CacheLevel& l1 = cpu.caches.front();
  c.line_bytes = int(l1.line_bytes);
  c.l1_ways = int(std::max<int64_t>(1, l1.associativity));
  c.l1_sets = int(std::max<int64_t>(1, l1.size_bytes / (l1.line_bytes * c.l1_ways)));
  c.vector_fmas_per_ns = cpu.frequency_ghz * std::max(1, cpu.fma_units);
  if (cpu.caches.size() > 1) {
    const CacheLevel& l2 = cpu.caches[1];
    c.l2_bytes_per_fma = c.vector_fmas_per_ns > 0 ? l2.bandwidth_gbs / c.vector_fmas_per_ns : 0;
    c.l2_bytes = int64_t(l2.core_share());
  }
  return c;
}

Schedule default_schedule(const Operator& op, const HwSpec& target) {
  const int lanes = target.kind == TargetKind::Cpu ? target.cpu.fp32_lanes() : 1;
  Schedule sched;
  sched.target = target.kind;
  if (target.kind == TargetKind::Gpu) sched.gpu_banks = target.gpu.shared_memory_banks;
  if (target.kind == TargetKind::Cpu) sched.cpu_caches = cpu_caches_of(target.cpu);
  for (const te::Tensor& t : compute_stages(op)) {
    StageSchedule s;
    s.tensor = t;
    const Expr& body = t.get()->body;
    s.inlined = !is_output(op, t) && !body.get()->as<ReduceNode>() && !has_expensive_math(body);
    const int rank = t.ndim();
    if (const auto* red = body.get()->as<ReduceNode>(); red && target.kind == TargetKind::Cpu) {
      const Expr& extent = red->axes.back().extent;
      s.reduce_width = vector_width_for(extent, lanes);
      s.accumulators = std::clamp(target.cpu.fma_latency * target.cpu.fma_units, 1, 8);
      // No more vectors than the row fills (a short row is all remainder).
      if (auto n = extent.as_const_int())
        s.accumulators = int(std::clamp<int64_t>(*n / s.reduce_width, 1, s.accumulators));
    }
    if (rank >= 2) {
      s.vector_width = vector_width_for(t.shape().back(), lanes);
      if (s.vector_width > 1) s.vector_axis = rank - 1;
      s.parallel_axes = rank - 1;
    } else {
      s.parallel_axes = rank;
    }
    sched.stages.push_back(s);
  }
  // GPUs run the stages as kernels one after another (a block per row is left for later).
  sched.row_axes = target.kind == TargetKind::Cpu ? row_fusion_axes(op) : 0;
  sched.row_pipelined = sched.row_axes > 0 && row_pipelining_pays(sched, target.cpu);
  return sched;
}

}  // namespace loom

namespace loom {

Schedule schedule_with_state(const Task& task, const State& state) {
  Schedule sched = default_schedule(*task.scheduled, task.target);
  sched.anchor = task.anchor;
  sched.op = task.scheduled;
  const AnchorInfo& anchor = *task.anchor;
  // A row-fused operator takes only the state's parallel tile over the row
  // axes (rows per task); its stages are lowered row by row, none fused.
  const bool by_rows = sched.row_axes > 0;
  for (StageSchedule& s : sched.stages) {
    if (s.tensor.get() == anchor.stage.get()) {
      s.state = state;
      s.inlined = false;
    }
    if (!by_rows && state->fuse && anchor.consumer.defined() && s.tensor.get() == anchor.consumer.get())
      s.fused = true;
    for (size_t i = 0; i < anchor.accesses.size(); ++i) {
      if (!state->materialized(i) || s.tensor.get() != anchor.accesses[i].tensor.get()) continue;
      s.inlined = false;
      s.row_pitch = materialized_row_pitch(anchor.accesses[i], sched.cpu_caches);
    }
  }
  for (int a = 0; by_rows && a < sched.row_axes && a < state->num_axes; ++a) sched.rows_per_task *= state->tile[0][a];
  return sched;
}

}  // namespace loom
