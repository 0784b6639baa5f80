#include "schedule/tuner.h"

namespace loom {

const char* to_string(MeasureError e) {
  switch (e) {
    case MeasureError::None: return "none";
    case MeasureError::Compile: return "compile";
    case MeasureError::Runtime: return "runtime";
    case MeasureError::Crash: return "crash";
    case MeasureError::Timeout: return "timeout";
    case MeasureError::Wrong: return "wrong";
  }
  return "unknown";
}

std::vector<Candidate> ProposeOnceTuner::propose(int n) {
  if (done_ || n <= 0) return {};
  done_ = true;
  return build_(n);
}

Candidate make_candidate(const Task& task, const State& state, double predicted_s) {
  return {state, schedule_with_state(task, state), predicted_s};
}

}  // namespace loom
