// The learned cost model: gradient-boosted trees (XGBoost's C API) over
// state_features(), trained on every measurement of the tuning job.
//
// Three losses are available, chosen by measurement (loom_bench_cost_model on
// the tuning benchmark's records: held-out Kendall tau 0.58 chronological /
// 0.71 alternate for the weighted squared error, against 0.53 / 0.51
// residual, 0.50 / 0.64 ranking, 0.57 / 0.39 analytic): the default is
// Ansor's label-weighted squared error. The residual loss learns a correction of
// the analytic model: the label is log(measured speed / analytic speed),
// centred per task, and the score is the analytic log speed plus the
// prediction, so with little data the analytic ranking stands and every
// measurement bends it (failed measurements teach nothing here). The other
// two follow Ansor's labels, per task best measured time / time (0 for
// failures): a pairwise ranking loss with one query group per task, or
// Ansor's squared error weighted by the label. loom_bench_cost_model
// compares them on held-out measurements. Training is adaptive, as in MetaSchedule: the
// model is retrained only when the data has grown by a fifth since the last
// fit. Until it has been trained once, predictions are the analytic model's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/cost_model.h"

namespace loom {

enum class XgbLoss { Residual, Rank, WeightedSquare };

struct XgbOptions {
  XgbLoss loss = XgbLoss::WeightedSquare;
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
    std::vector<double> analytic;  // the analytic model's log speed
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
