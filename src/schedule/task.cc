#include "schedule/task.h"

#include <algorithm>

#include "ir/size_binding.h"
#include "schedule/collapse_axes.h"

namespace loom {

namespace {
// Symbolic dimensions are measured at this size (the planning size of the
// dynamic-shape runtime replaces it per bucket).
constexpr int64_t kMeasureSize = 64;
}  // namespace

double Task::flops() const { return double(eval_int(op.flops, bind_sizes(op, plan_sizes))); }

std::string workload_key(const Operator& op) {
  std::string key = op.name;
  for (const auto& [k, v] : op.params) key += " " + k + "=" + v;  // std::map: sorted by name
  return key + " float32";
}

Task make_task(const Operator& op, const HwSpec& target, int threads, double weight,
               const std::vector<int64_t>& plan_sizes) {
  check_operator_sizes(op);
  Task t;
  t.op = op;
  t.scheduled = std::make_shared<const Operator>(collapse_axes(op));
  AnchorInfo anchor = analyze_anchor(*t.scheduled);
  if (!plan_sizes.empty()) {
    const SizeBinding binding = bind_sizes(*t.scheduled, plan_sizes);
    for (const Expr& e : anchor.extents) anchor.planned.push_back(eval_int(e, binding));
  }
  t.anchor = std::make_shared<const AnchorInfo>(std::move(anchor));
  t.target = target;
  t.threads = threads > 0 ? threads : std::max(1, target.kind == TargetKind::Cpu ? target.cpu.cores : 1);
  t.plan_sizes = plan_sizes.empty() ? std::vector<int64_t>(op.size_vars.size(), kMeasureSize) : plan_sizes;
  t.workload_key = workload_key(op);
  t.weight = weight;
  return t;
}

}  // namespace loom
