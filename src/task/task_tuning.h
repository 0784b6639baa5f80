// Tuning one task, round by round: propose, measure, record, observe.
//
// A round asks the task's tuner for up to n candidates, measures them in
// the isolated measurer together with the best kernel so far (so that the
// round's winner replaces it only if it is faster side by side, on the same
// machine state), appends one record per measurement and fsyncs, and hands
// the results to the tuner; a final playoff re-measures the few fastest.
// Records of earlier runs of the same task
// (workload, spec, threads, strategy) resume it: their trials count, the
// tuner observes them, and their best is the incumbent.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/measurer.h"
#include "search/records.h"
#include "task/strategies.h"

namespace loom {

struct TuningSettings {
  std::string strategy = "hybrid";
  StrategyContext context;
  MeasureOptions measure;
};

struct CurvePoint {
  int trials = 0;       // measurements spent on the task so far (resumed included)
  double seconds = 0;   // since the tuning job started
  double best_ms = 0;   // best time so far (0: none yet)
};

class TaskTuning {
 public:
  using Clock = std::chrono::steady_clock;
  TaskTuning(Task task, const TuningSettings& settings, RecordWriter* writer, const std::vector<Record>& prior,
             Clock::time_point start);

  const Task& task() const { return *task_; }
  // Measures up to n new candidates; 0 when the tuner has nothing left.
  int round(int n);

  // Re-measures the k fastest distinct candidates measured so far (and the
  // incumbent) side by side in one worker over more passes, and keeps the
  // fastest: a single round's timing on a noisy machine can crown a
  // candidate that is not really faster. Not a trial, not recorded.
  void playoff(int k);

  int trials() const { return trials_; }
  int resumed() const { return resumed_; }
  int errors() const { return errors_; }
  int rounds() const { return int(history_.size()); }
  bool exhausted() const { return exhausted_; }
  const std::optional<Candidate>& best() const { return best_; }
  double best_ms() const { return best_ms_; }
  double best_max_rel_err() const { return best_err_; }
  double seed_ms() const { return seed_ms_; }      // best of the first round measured here
  double construct_ms() const { return construct_ms_; }  // the first proposal's time
  const std::vector<double>& history() const { return history_; }  // best_ms after each round
  const std::vector<CurvePoint>& curve() const { return curve_; }

 private:
  void resume(const std::vector<Record>& prior);

  std::unique_ptr<Task> task_;  // tuners keep a reference: stable address
  TuningSettings settings_;
  std::unique_ptr<Tuner> tuner_;
  Measurer measurer_;
  RecordWriter* writer_;
  Clock::time_point start_;
  std::optional<Candidate> best_;
  double best_ms_ = 0, best_err_ = 0, seed_ms_ = 0, construct_ms_ = 0;
  int trials_ = 0, resumed_ = 0, errors_ = 0;
  bool exhausted_ = false, proposed_once_ = false;
  std::vector<std::pair<Candidate, double>> correct_;  // every correct measurement: candidate, time
  std::vector<double> history_;
  std::vector<CurvePoint> curve_;
};

}  // namespace loom
