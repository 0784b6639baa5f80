#include "schedule/row_fusion.h"

#include <algorithm>

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

}  // namespace loom
