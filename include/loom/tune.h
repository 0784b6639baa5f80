// Tuning: construction, refined by measurement under a learned cost model.
//
// tune() spends a budget of measurements on one operator: the strategy
// proposes candidate schedules in rounds, each candidate is compiled, run
// in a worker process (a crash or hang is an error result, not a crash of
// the caller), checked against the reference executor and timed; the
// fastest correct one is returned, compiled. tune_workload() shares one
// budget among a model's operators with the task scheduler.
//
// With a records file, every measurement is appended to it (JSON lines,
// fsync per round); running again with the same file resumes (the trials
// already spent count, the cost model is retrained from them), and
// compile() / `loom run --records` apply the best recorded schedule.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/compile.h"
#include "loom/hwspec.h"
#include "loom/operator.h"

namespace loom {

inline constexpr int kMaxTrials = 100000;
inline constexpr int kMaxBatch = 1024;

struct TuneOptions {
  // hybrid: construction's top states refined by evolution (loom's own);
  // search: Ansor-like evolution from random samples; random: random states;
  // construct / roller: construction's top-`trials`, measured.
  std::string strategy = "hybrid";
  HwSpec target;       // empty name: detect the host
  int threads = 0;     // [0, kMaxThreads], clamped to usable_cpus(); 0: one per core
  int trials = 64;     // measurements (per operator; for a workload, in all), [1, kMaxTrials]
  int batch = 16;      // measurements per round, [1, kMaxBatch]
  std::string records; // JSON-lines file to append to and resume from; empty: none
  uint64_t seed = 1;
  std::string cost_model = "xgboost";  // xgboost | xgboost-rank | xgboost-residual | analytic
  double timeout_s = 10;  // a candidate making no progress this long is killed, (0, 3600]
  int walk_steps = kDefaultWalkSteps;  // construction's walk budget, [1, kMaxWalkSteps]
  std::string scheduler = "gradient";  // workloads: gradient | round-robin
};

// After each round, for progress lines.
struct TuneProgress {
  std::string task;  // workload key of the task that ran the round
  int trials = 0;    // measurements spent on it (resumed included)
  int errors = 0;
  double best_gflops = 0;
  double elapsed_s = 0;
};

struct TuneCurvePoint {
  int trials = 0;
  double seconds = 0;
  double best_gflops = 0;
};

struct TuneReport {
  std::string op;
  std::map<std::string, std::string> params;
  std::string strategy, hwspec, workload_key;
  int threads = 0;
  int trials = 0;      // the budget
  int measured = 0;    // measurements taken by this run
  int resumed = 0;     // measurements found in the records file
  int errors = 0;      // failed measurements (crash, hang, wrong, compile, runtime), resumed included
  double tune_s = 0;
  double construct_ms = 0;  // the strategy's first proposal
  double seed_gflops = 0;   // best of the first round as measured (hybrid: construction's best)
  double best_time_ms = 0;
  double best_gflops = 0;
  double max_rel_err = 0;   // of the returned kernel on fresh random inputs
  bool ok = false;          // a correct kernel was found and checked
  std::string records;
  std::string best_schedule;
  std::vector<TuneCurvePoint> curve;  // best so far after each round
  std::vector<std::string> warnings;  // skipped record lines and the like
};

struct TuneResult {
  TuneReport report;
  Kernel kernel;  // the best schedule, compiled; empty when none was correct
};

TuneResult tune(const Operator& op, const TuneOptions& options = {},
                const std::function<void(const TuneProgress&)>& on_round = {});

struct WorkloadTuneReport {
  std::string workload, scheduler, strategy, hwspec;
  int threads = 0;
  int trials = 0;
  double tune_s = 0;
  double weighted_total_ms = 0;  // sum of weight * best time
  bool ok = false;               // every task has a correct kernel
  std::vector<std::pair<std::string, TuneReport>> tasks;  // label, report
  std::vector<std::pair<std::string, double>> weights;    // label, weight
  std::vector<std::string> warnings;
};

WorkloadTuneReport tune_workload(const std::string& workload, const TuneOptions& options = {},
                                 const std::function<void(const TuneProgress&)>& on_round = {});

}  // namespace loom
