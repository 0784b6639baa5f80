// compile(): choose a schedule (records, or a strategy's candidates, the
// fastest of the top K when asked), then lower and generate code.
#include <chrono>
#include <optional>

#include "driver/compile_schedule.h"
#include "driver/target.h"
#include "loom/compile.h"
#include "loom/error.h"
#include "search/measurer.h"
#include "search/records.h"
#include "task/strategies.h"

namespace loom {

namespace {

double ms_since(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// Notes accumulate: "; " between them.
void add_note(std::string& note, const std::string& text) { note += (note.empty() ? "" : "; ") + text; }

// The best recorded schedule for the task, compiled; empty (with a note)
// when the records hold none that replays.
std::optional<Kernel> compile_from_records(const Task& task, const CompileOptions& options, int threads,
                                           std::string& note) {
  std::vector<std::string> warnings;
  std::vector<Record> records = load_records(options.records, warnings);
  std::optional<Record> best = best_record(records, task);
  if (!best) {
    add_note(note, "no correct record of '" + task.workload_key + "' on hwspec '" + task.target.name + "' in " +
                       options.records + "; used strategy " + options.strategy);
    return std::nullopt;
  }
  std::string why;
  State state = replay_record(*best, task, why);
  if (!state) {
    add_note(note, "the best record of '" + task.workload_key + "' does not replay (" + why + "); used strategy " +
                       options.strategy);
    return std::nullopt;
  }
  Kernel k = compile_schedule(task.op, make_candidate(task, state, 0).schedule, task.target, threads);
  CompileReport& r = mutable_report(k);
  r.strategy = best->strategy;
  r.from_records = true;
  r.note = note;
  add_note(r.note, "schedule from " + options.records + " (recorded " + std::to_string(best->time_ms) + " ms)");
  return k;
}

}  // namespace

std::vector<std::string> list_strategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table()) names.push_back(s.name);
  return names;
}

Kernel compile(const Operator& op, const CompileOptions& options) {
  const StrategyInfo& strategy = find_strategy(options.strategy);
  std::string note;
  const int threads = resolve_threads(options.threads, note);
  LOOM_USER_CHECK(options.top_k >= 1 && options.top_k <= kMaxTopK, "top_k=", options.top_k, " is outside [1, ",
                  kMaxTopK, "]");
  LOOM_USER_CHECK(options.walk_steps >= 1 && options.walk_steps <= kMaxWalkSteps, "walk_steps=", options.walk_steps,
                  " is outside [1, ", kMaxWalkSteps, "]");
  LOOM_USER_CHECK(options.temperature >= 0.01 && options.temperature <= 100, "temperature=", options.temperature,
                  " is outside [0.01, 100]");
  const Task task = make_task(op, resolve_target(options.target), threads);
  if (!options.records.empty())
    if (std::optional<Kernel> k = compile_from_records(task, options, threads, note)) return *k;

  StrategyContext context;
  context.construct = {options.walk_steps, options.temperature, options.seed};
  context.seed = options.seed;
  if (strategy.searches) context.model = make_cost_model("analytic");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Candidate> candidates = strategy.make(task, context)->propose(options.top_k);
  const double construct_ms = ms_since(t0);
  LOOM_INTERNAL_CHECK(!candidates.empty(), "strategy ", strategy.name, " produced no candidate");

  // The top K are timed interleaved, side by side, and the fastest correct
  // one kept (in process: these are construction's own candidates).
  size_t best = 0;
  double measure_ms = 0;
  int measured = 0;
  if (candidates.size() > 1) {
    auto t1 = std::chrono::steady_clock::now();
    MeasureOptions mo;
    mo.isolate = false;
    std::vector<MeasureResult> results = Measurer(task, mo).measure(candidates);
    measured = int(candidates.size());
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].ok() && (!results[best].ok() || results[i].time_ms < results[best].time_ms)) best = i;
    LOOM_INTERNAL_CHECK(results[best].ok(), "no candidate of strategy ", strategy.name,
                        " compiled and matched the reference: ", results[best].message);
    measure_ms = ms_since(t1);
  }
  Kernel kept = compile_schedule(op, candidates[best].schedule, task.target, threads);
  CompileReport& report = mutable_report(kept);
  report.strategy = strategy.name;
  report.construct_ms = construct_ms;
  report.measure_ms = measure_ms;
  report.measured_candidates = measured;
  report.candidates = int(candidates.size());
  report.predicted_ms = candidates[best].predicted_s * 1e3;
  report.note = note;
  return kept;
}

}  // namespace loom
