// The learned cost model: gradient-boosted trees (XGBoost's C API) over
// state_features(), trained on every measurement of the tuning job.
//
// Labels follow Ansor: per task, best measured time / time (1 for the best,
// towards 0 for slow ones, 0 for failures). Two losses are available: a
// pairwise ranking loss with one query group per task (the default: only
// the order of states within a task matters to search), or Ansor's squared
// error weighted by the label. Training is adaptive, as in MetaSchedule: the
// model is retrained only when the data has grown by a fifth since the last
// fit. Until it has been trained once, predictions are the analytic model's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/cost_model.h"

namespace loom {

enum class XgbLoss { Rank, WeightedSquare };

struct XgbOptions {
  XgbLoss loss = XgbLoss::Rank;
  int rounds = 60;           // boosting rounds per fit
  int min_samples = 8;       // no fit below this many measurements
  double regrow = 1.2;       // refit when the data has grown by this factor
  uint64_t seed = 1;
};

class XgbCostModel : public CostModel {
 public:
  explicit XgbCostModel(XgbOptions options = {});
  ~XgbCostModel() override;
  XgbCostModel(const XgbCostModel&) = delete;
  XgbCostModel& operator=(const XgbCostModel&) = delete;

  std::string name() const override { return "xgboost"; }
  std::vector<double> predict(const Task& task, const std::vector<State>& states) override;
  void update(const Task& task, const std::vector<State>& states, const std::vector<MeasureResult>& results) override;
  int samples() const override { return samples_; }
  bool trained() const override { return booster_ != nullptr; }

 private:
  struct TaskData {
    std::vector<std::vector<float>> features;
    std::vector<double> time_ms;  // 0: failed
  };
  void fit();

  XgbOptions options_;
  std::map<std::string, TaskData> data_;  // by workload key
  int samples_ = 0;
  int fitted_samples_ = 0;
  void* booster_ = nullptr;
  AnalyticCostModel fallback_;
};

}  // namespace loom
