#include "search/cost_model.h"

#include "construct/analytic_model.h"
#include "loom/error.h"
#include "search/xgb_cost_model.h"

namespace loom {

std::vector<double> AnalyticCostModel::predict(const Task& task, const std::vector<State>& states) {
  std::vector<double> out;
  out.reserve(states.size());
  const double flops = task.flops();
  for (const State& s : states) out.push_back(flops / estimate(*task.anchor, *s, task.target, task.threads).seconds);
  return out;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& name, uint64_t seed) {
  if (name == "analytic") return std::make_unique<AnalyticCostModel>();
  if (name == "xgboost") return std::make_unique<XgbCostModel>(XgbOptions{.seed = seed});
  if (name == "xgboost-rank") return std::make_unique<XgbCostModel>(XgbOptions{.loss = XgbLoss::Rank, .seed = seed});
  if (name == "xgboost-residual")
    return std::make_unique<XgbCostModel>(XgbOptions{.loss = XgbLoss::Residual, .seed = seed});
  throw UserError("unknown cost model '" + name + "' (known: analytic, xgboost, xgboost-rank, xgboost-residual)");
}

}  // namespace loom
