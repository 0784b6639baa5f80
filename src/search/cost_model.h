// Cost models: scores for schedule states, learned or analytic.
//
// A cost model predicts, for states of one task, a score where higher means
// faster; scores compare states of the same task only. Search asks for
// scores in batches (predict) and feeds every measurement back (update).
// Two implementations: the analytic hardware model (construct/), which
// learns nothing, and a gradient-boosted model (XGBoost) over features of
// each state that corrects the analytic one from measurements. One model
// serves all tasks of a tuning job, so what it learns on one operator
// carries over to the next, and records of earlier jobs warm-start it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "schedule/state.h"
#include "schedule/task.h"
#include "schedule/tuner.h"

namespace loom {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Scores, one per state, higher is faster.
  virtual std::vector<double> predict(const Task& task, const std::vector<State>& states) = 0;
  // Measurements of `states` (same order); failed ones teach "slow".
  virtual void update(const Task& task, const std::vector<State>& states, const std::vector<MeasureResult>& results) = 0;
  // Measurements seen so far.
  virtual int samples() const { return 0; }
  // Whether predictions carry knowledge yet (a learned model before its
  // first fit falls back to the analytic model's scores).
  virtual bool trained() const { return true; }
};

// The analytic model's predicted throughput (FLOP/s).
class AnalyticCostModel : public CostModel {
 public:
  std::string name() const override { return "analytic"; }
  std::vector<double> predict(const Task& task, const std::vector<State>& states) override;
  void update(const Task&, const std::vector<State>&, const std::vector<MeasureResult>&) override {}
};

// "analytic" or "xgboost"; UserError for another name.
std::unique_ptr<CostModel> make_cost_model(const std::string& name, uint64_t seed = 1);

}  // namespace loom
