#include "task/task_tuning.h"

#include "loom/error.h"

namespace loom {

namespace {

double seconds_since(TaskTuning::Clock::time_point t) {
  return std::chrono::duration<double>(TaskTuning::Clock::now() - t).count();
}


}  // namespace

TaskTuning::TaskTuning(Task task, const TuningSettings& settings, RecordWriter* writer,
                       const std::vector<Record>& prior, Clock::time_point start)
    : task_(std::make_unique<Task>(std::move(task))),
      settings_(settings),
      tuner_(find_strategy(settings.strategy).make(*task_, settings.context)),
      measurer_(*task_, settings.measure),
      writer_(writer),
      start_(start) {
  resume(prior);
}

void TaskTuning::resume(const std::vector<Record>& prior) {
  const std::string fp = hwspec_fingerprint(task_->target);
  std::vector<Candidate> candidates;
  std::vector<MeasureResult> results;
  for (const Record& r : prior) {
    if (r.workload != task_->workload_key || r.hwspec_fingerprint != fp || r.threads != task_->threads ||
        r.strategy != settings_.strategy)
      continue;
    ++resumed_;
    std::string why;
    State s = replay_record(r, *task_, why);
    if (!s) continue;  // counted as spent; nothing to learn from
    candidates.push_back(make_candidate(*task_, s, 0));
    results.push_back(measure_result(r));
    if (r.ok()) correct_.push_back({candidates.back(), r.time_ms});
    if (r.ok() && (!best_ || r.time_ms < best_ms_)) {
      best_ = candidates.back();
      best_ms_ = r.time_ms;
    }
  }
  trials_ = resumed_;
  errors_ = 0;
  for (const MeasureResult& m : results) errors_ += !m.ok();
  if (!candidates.empty()) tuner_->observe(candidates, results);
}

int TaskTuning::round(int n) {
  if (exhausted_ || n <= 0) return 0;
  auto t0 = Clock::now();
  std::vector<Candidate> candidates = tuner_->propose(n);
  if (!proposed_once_) construct_ms_ = seconds_since(t0) * 1e3;
  proposed_once_ = true;
  if (candidates.empty()) {
    exhausted_ = true;
    return 0;
  }
  std::vector<Candidate> batch = candidates;
  if (best_) batch.push_back(*best_);  // the incumbent, re-measured side by side
  std::vector<MeasureResult> results = measurer_.measure(batch);
  std::optional<MeasureResult> incumbent;
  if (best_) {
    incumbent = results.back();
    results.pop_back();
  }
  if (writer_) {
    std::vector<Record> records;
    for (size_t i = 0; i < candidates.size(); ++i)
      records.push_back(make_record(*task_, settings_.strategy, candidates[i], results[i]));
    writer_->append(records);
  }
  tuner_->observe(candidates, results);

  int winner = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    errors_ += !results[i].ok();
    if (results[i].ok()) correct_.push_back({candidates[i], results[i].time_ms});
    if (results[i].ok() && (winner < 0 || results[i].time_ms < results[size_t(winner)].time_ms)) winner = int(i);
  }
  if (trials_ == resumed_ && winner >= 0) seed_ms_ = results[size_t(winner)].time_ms;
  trials_ += int(candidates.size());
  if (incumbent && incumbent->ok()) best_ms_ = incumbent->time_ms;
  if (winner >= 0 && (!best_ || results[size_t(winner)].time_ms < best_ms_)) {
    best_ = candidates[size_t(winner)];
    best_ms_ = results[size_t(winner)].time_ms;
    best_err_ = results[size_t(winner)].max_rel_err;
  }
  history_.push_back(best_ms_);
  curve_.push_back({trials_, seconds_since(start_), best_ms_});
  return int(candidates.size());
}

void TaskTuning::playoff(int k) {
  std::stable_sort(correct_.begin(), correct_.end(), [](auto& a, auto& b) { return a.second < b.second; });
  std::vector<Candidate> finalists;
  auto add = [&](const Candidate& c) {
    for (const Candidate& f : finalists)
      if (*f.state == *c.state) return;
    finalists.push_back(c);
  };
  if (best_) add(*best_);
  for (size_t i = 0; i < correct_.size() && int(finalists.size()) < k + 1; ++i) add(correct_[i].first);
  if (finalists.size() < 2) return;
  MeasureOptions more = settings_.measure;
  more.passes = 5;
  more.faults = {};  // a re-measurement, not a new candidate
  std::vector<MeasureResult> results = Measurer(*task_, more).measure(finalists);
  int winner = -1;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].ok() && (winner < 0 || results[i].time_ms < results[size_t(winner)].time_ms)) winner = int(i);
  if (winner < 0) return;
  best_ = finalists[size_t(winner)];
  best_ms_ = results[size_t(winner)].time_ms;
  best_err_ = results[size_t(winner)].max_rel_err;
}

}  // namespace loom
