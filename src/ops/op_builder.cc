#include "ops/op_builder.h"

#include <unordered_set>

#include "ir/analysis.h"
#include "ir/expr_nodes.h"

namespace loom::ops {

Operator finish_operator(const std::string& name, std::vector<te::Tensor> inputs,
                         std::vector<te::Tensor> outputs, Expr flops) {
  Operator op;
  op.name = name;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.flops = std::move(flops);
  std::unordered_set<const ExprNode*> seen;
  for (const te::Tensor& t : op.inputs)
    for (const Expr& d : t.shape())
      visit(d, [&](const Expr& e) {
        if (e.get()->kind == ExprKind::Var && seen.insert(e.get()).second)
          op.size_vars.push_back(Var::from(e));
        return true;
      });
  return op;
}

te::Tensor pad_spatial(const te::Tensor& x, int h_axis, int64_t pad, Expr fill) {
  if (pad == 0) return x;
  std::vector<Expr> shape = x.shape();
  Expr H = shape[h_axis], W = shape[h_axis + 1];
  shape[h_axis] = H + 2 * pad;
  shape[h_axis + 1] = W + 2 * pad;
  return te::compute(shape, [&](const std::vector<Var>& ax) {
    Expr h = ax[h_axis], w = ax[h_axis + 1];
    std::vector<Expr> src(ax.begin(), ax.end());
    src[h_axis] = h - pad;
    src[h_axis + 1] = w - pad;
    Expr inside = h >= pad && h < H + pad && w >= pad && w < W + pad;
    return select(inside, x(src), fill);
  }, x.name() + "_pad");
}

}  // namespace loom::ops
