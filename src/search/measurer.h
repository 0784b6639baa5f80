// Measuring candidates: compile, check against the reference, time.
//
// A batch is measured in a worker process forked for it (isolate = true):
// a candidate that crashes, hangs past the time limit or runs out of memory
// kills the worker, not loom; it is recorded as an error result, the worker
// is forked again for the candidates left, and measurement goes on. Each
// candidate's first run is checked against the reference executor on a
// sample of output points: a wrong kernel is an error result and can never
// become the best.
//
// Timing follows Ansor (warm-up, repeats, a minimum time, optional cache
// flush) and is built for a noisy, shared machine: all candidates of a batch
// are compiled first, then timed interleaved over several passes (the start
// rotating each pass), and compared by the median of all their samples.
// Candidates whose first run is far slower than the batch's best are not
// timed further: one sample tells them apart.
//
// With isolate = false the same steps run in process (compile()'s top-K
// measurement): no protection, no injected faults.
#pragma once

#include <vector>

#include "loom/buffer.h"
#include "schedule/task.h"
#include "schedule/tuner.h"
#include "search/faults.h"

namespace loom {

struct MeasureOptions {
  bool isolate = true;
  double timeout_s = 10;     // per step of one candidate (compile + check, or one timing pass)
  int passes = 3;
  int repeats = 3;           // timed runs per pass, at least
  double min_pass_ms = 20;   // and at least this long per pass
  int max_repeats = 100;
  bool flush_cache = false;
  double prune_ratio = 4;    // first run this many times the best: one sample is enough
  int64_t check_points = 1024;
  FaultPlan faults;          // injected in the worker (isolate only)
};

class Measurer {
 public:
  Measurer(const Task& task, MeasureOptions options);
  // One result per candidate, same order.
  std::vector<MeasureResult> measure(const std::vector<Candidate>& batch);
  const MeasureOptions& options() const { return options_; }

 private:
  const Task& task_;
  MeasureOptions options_;
  std::vector<Buffer> inputs_;  // fixed random inputs at the task's planning sizes
  std::vector<std::vector<int64_t>> output_shapes_;
};

}  // namespace loom
