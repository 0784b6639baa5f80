// The contract between strategies and whoever measures their proposals.
//
// Every way of choosing a schedule is a Tuner over one Task: it proposes
// candidates, someone compiles and measures them, and it observes the
// results. Construction strategies (construct, roller, default) propose once
// and ignore what they observe; search strategies (hybrid, search, random)
// propose round after round and learn from every measurement. Neither side
// knows how the other works: the task scheduler and compile() drive tuners
// through this interface alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/task.h"

namespace loom {

struct Candidate {
  State state;             // null for schedules without a state (the default strategy)
  Schedule schedule;
  double predicted_s = 0;  // the proposer's estimate, 0 when it has none
};

// How a measurement failed. Every failure is an ordinary result: tuning
// goes on, and a failed candidate never becomes the best.
enum class MeasureError { None, Compile, Runtime, Crash, Timeout, Wrong };
const char* to_string(MeasureError e);

struct MeasureResult {
  MeasureError error = MeasureError::None;
  std::string message;             // what went wrong, when it did
  std::vector<double> samples_ms;  // every timed run, over all passes
  double time_ms = 0;              // the robust statistic (median of the samples); 0 on error
  double max_rel_err = 0;          // of the reference check
  bool ok() const { return error == MeasureError::None; }
};

class Tuner {
 public:
  virtual ~Tuner() = default;
  // Up to n candidates not proposed before; empty when there is nothing more.
  virtual std::vector<Candidate> propose(int n) = 0;
  // The results of measuring `candidates` (same order).
  virtual void observe(const std::vector<Candidate>& candidates, const std::vector<MeasureResult>& results) {}
};

// A tuner that builds its whole list on the first call (asked for n) and
// has nothing more afterwards: construction strategies.
class ProposeOnceTuner : public Tuner {
 public:
  explicit ProposeOnceTuner(std::function<std::vector<Candidate>(int n)> build) : build_(std::move(build)) {}
  std::vector<Candidate> propose(int n) override;

 private:
  std::function<std::vector<Candidate>(int)> build_;
  bool done_ = false;
};

// The candidate for `state` on `task`, with the model's estimate.
Candidate make_candidate(const Task& task, const State& state, double predicted_s);

}  // namespace loom
