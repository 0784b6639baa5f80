#include "search/xgb_cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>

#include "loom/error.h"
#include "search/features.h"

namespace loom {

namespace {

void xgb_check(int status, const char* what) {
  LOOM_INTERNAL_CHECK(status == 0, "XGBoost ", what, ": ", XGBGetLastError());
}

// A DMatrix over row-major features, freed on scope exit.
class Matrix {
 public:
  explicit Matrix(const std::vector<float>& flat) {
    const size_t cols = size_t(feature_count());
    xgb_check(XGDMatrixCreateFromMat(flat.data(), bst_ulong(flat.size() / cols), bst_ulong(cols), NAN, &handle_),
              "creating a matrix");
  }
  ~Matrix() { XGDMatrixFree(handle_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

}  // namespace

XgbCostModel::XgbCostModel(XgbOptions options) : options_(options) {}

XgbCostModel::~XgbCostModel() {
  if (booster_) XGBoosterFree(booster_);
}

void XgbCostModel::update(const Task& task, const std::vector<State>& states,
                          const std::vector<MeasureResult>& results) {
  LOOM_INTERNAL_CHECK(states.size() == results.size(), "states and results differ in number");
  TaskData& d = data_[task.workload_key];
  for (size_t i = 0; i < states.size(); ++i) {
    if (!states[i]) continue;
    d.features.push_back(state_features(task, *states[i]));
    d.time_ms.push_back(results[i].ok() ? results[i].time_ms : 0);
    d.analytic.push_back(std::log(fallback_.predict(task, {states[i]})[0]));
    ++samples_;
  }
  if (samples_ >= options_.min_samples && double(samples_) >= options_.regrow * double(fitted_samples_)) fit();
}

void XgbCostModel::fit() {
  std::vector<float> flat, labels, weights;
  std::vector<unsigned> groups;
  for (const auto& [key, d] : data_) {
    double best = 0;
    for (double t : d.time_ms)
      if (t > 0 && (best == 0 || t < best)) best = t;
    const size_t first = labels.size();
    for (size_t i = 0; i < d.features.size(); ++i) {
      if (options_.loss == XgbLoss::Residual && d.time_ms[i] <= 0) continue;
      flat.insert(flat.end(), d.features[i].begin(), d.features[i].end());
      float label = d.time_ms[i] > 0 ? float(best / d.time_ms[i]) : 0.f;
      if (options_.loss == XgbLoss::Residual) label = float(std::log(1.0 / d.time_ms[i]) - d.analytic[i]);
      labels.push_back(label);
      weights.push_back(std::max(label, 0.05f));
    }
    if (options_.loss == XgbLoss::Residual && labels.size() > first) {  // centred per task
      double mean = 0;
      for (size_t i = first; i < labels.size(); ++i) mean += labels[i];
      mean /= double(labels.size() - first);
      for (size_t i = first; i < labels.size(); ++i) labels[i] -= float(mean);
    }
    groups.push_back(unsigned(labels.size() - first));
  }
  if (labels.empty()) return;
  Matrix train(flat);
  xgb_check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), bst_ulong(labels.size())), "setting labels");
  if (options_.loss == XgbLoss::Rank)
    xgb_check(XGDMatrixSetUIntInfo(train.get(), "group", groups.data(), bst_ulong(groups.size())), "setting groups");
  else
    xgb_check(XGDMatrixSetFloatInfo(train.get(), "weight", weights.data(), bst_ulong(weights.size())),
              "setting weights");
  BoosterHandle booster = nullptr;
  DMatrixHandle mats[] = {train.get()};
  xgb_check(XGBoosterCreate(mats, 1, &booster), "creating a booster");
  auto set = [&](const char* k, const std::string& v) { xgb_check(XGBoosterSetParam(booster, k, v.c_str()), k); };
  set("objective", options_.loss == XgbLoss::Rank ? "rank:pairwise" : "reg:squarederror");
  if (options_.loss == XgbLoss::Residual) set("base_score", "0");
  set("max_depth", "4");
  set("lambda", "4");
  set("eta", "0.1");
  set("min_child_weight", "1");
  set("gamma", "0.0001");
  set("nthread", "1");
  set("verbosity", "0");
  set("seed", std::to_string(options_.seed % 2147483647));
  for (int it = 0; it < options_.rounds; ++it) xgb_check(XGBoosterUpdateOneIter(booster, it, train.get()), "training");
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
  fitted_samples_ = samples_;
}

std::vector<double> XgbCostModel::predict(const Task& task, const std::vector<State>& states) {
  if (!booster_ || states.empty()) return fallback_.predict(task, states);
  std::vector<float> flat;
  flat.reserve(states.size() * size_t(feature_count()));
  for (const State& s : states) {
    std::vector<float> f = state_features(task, *s);
    flat.insert(flat.end(), f.begin(), f.end());
  }
  Matrix m(flat);
  bst_ulong n = 0;
  const float* out = nullptr;
  xgb_check(XGBoosterPredict(booster_, m.get(), 0, 0, 0, &n, &out), "predicting");
  LOOM_INTERNAL_CHECK(n == states.size(), "XGBoost returned ", n, " predictions for ", states.size(), " states");
  std::vector<double> scores(out, out + n);
  if (options_.loss == XgbLoss::Residual) {
    std::vector<double> analytic = fallback_.predict(task, states);
    for (size_t i = 0; i < n; ++i) scores[i] += std::log(analytic[i]);
  }
  return scores;
}

}  // namespace loom
