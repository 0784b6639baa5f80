#include "schedule/row_fusion.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "ir/analysis.h"
#include "schedule/schedule.h"

namespace loom {

namespace {

bool same_extent(const Expr& a, const Expr& b) {
  return a.get() == b.get() || (a.as_const_int() && a.as_const_int() == b.as_const_int());
}

// Every read of a compute stage in `stage` indexes the first `rows` axes
// with `stage`'s own axes.
bool reads_own_rows(const te::Tensor& stage, int rows) {
  const TensorNode* s = stage.get();
  bool ok = true;
  visit(s->body, [&](const Expr& e) {
    if (auto* r = e.get()->as<TensorReadNode>(); r && !r->tensor.is_placeholder())
      for (int d = 0; d < rows; ++d) ok &= r->indices[size_t(d)].get() == s->axes[size_t(d)].get();
    return ok;
  });
  return ok;
}

}  // namespace

int row_fusion_axes(const Operator& op) {
  const std::vector<te::Tensor> stages = compute_stages(op);
  if (stages.size() < 2) return 0;
  size_t rows = stages.front().ndim(), widest = 0;
  bool reduces = false;
  for (const te::Tensor& t : stages) {
    rows = std::min(rows, size_t(t.ndim()));
    widest = std::max(widest, size_t(t.ndim()));
    reduces |= t.get()->body.get()->as<ReduceNode>() != nullptr;
  }
  if (rows == 0 || widest == rows || !reduces) return 0;
  for (const te::Tensor& t : stages) {
    for (size_t d = 0; d < rows; ++d)
      if (!same_extent(t.shape()[d], stages.front().shape()[d])) return 0;
    if (!reads_own_rows(t, int(rows))) return 0;
  }
  return int(rows);
}

std::vector<int> row_phases(const std::vector<te::Tensor>& stages) {
  std::unordered_map<const TensorNode*, int> ready;  // the phase a stage's value is read in
  std::vector<int> phase;
  for (const te::Tensor& t : stages) {
    int p = 0;
    visit(t.get()->body, [&](const Expr& e) {
      if (auto* r = e.get()->as<TensorReadNode>())
        if (auto it = ready.find(r->tensor.get()); it != ready.end()) p = std::max(p, it->second);
      return true;
    });
    phase.push_back(p);
    ready[t.get()] = p + (t.get()->body.get()->as<ReduceNode>() ? 1 : 0);
  }
  return phase;
}

std::vector<int> row_phases(const Schedule& schedule) {
  std::vector<te::Tensor> stages;
  for (const StageSchedule& s : schedule.stages) stages.push_back(s.tensor);
  return row_phases(stages);
}

// Each reduction of a row ends in a chain of dependent operations the core
// cannot overlap with the row's next phase, which waits for its result:
// its lanes combined (a tree of log2(accumulators x lanes) levels) and the
// scalar work on the result (a couple more). Over consecutive rows it can.
// A row whose reductions take more vectors than that chain has cycles hides
// the chain behind its own work, and pipelining only spreads the row's data
// over the rows in flight. (Measured on Zen 4, softmax and layernorm: 10-30%
// faster at 43 to 256 columns, even at 512, 2-10% slower at 768 to 4096.)
bool row_pipelining_pays(const Schedule& schedule, const CpuSpec& cpu) {
  const std::vector<int> phases = row_phases(schedule);
  if (*std::max_element(phases.begin(), phases.end()) == 0) return false;
  for (const StageSchedule& s : schedule.stages) {
    const auto* red = s.tensor.get()->body.get()->as<ReduceNode>();
    if (!red) continue;
    std::vector<Expr> extents;
    for (const te::IterVar& k : red->axes) extents.push_back(k.extent);
    const std::optional<int64_t> n = product(extents).as_const_int();
    if (!n) continue;  // unknown until called: rows are as likely short as long
    const int lanes = std::max(1, s.reduce_width) * std::max(1, s.accumulators);
    const int64_t chain = int64_t(cpu.fma_latency) * (std::bit_width(unsigned(lanes - 1)) + 2);
    if (*n / std::max(1, s.reduce_width) > chain) return false;
  }
  return true;
}

}  // namespace loom
