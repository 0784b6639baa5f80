// compile(): choose a schedule (records, or a strategy's candidates, the
// fastest of the top K when asked), then lower and generate code. Identical
// requests in one process return the kernel compiled the first time.
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "driver/compile_schedule.h"
#include "driver/target.h"
#include "ir/size_binding.h"
#include "loom/compile.h"
#include "loom/error.h"
#include "search/measurer.h"
#include "search/records.h"
#include "support/files.h"
#include "task/strategies.h"

namespace loom {

namespace {

double ms_since(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// Kernels compiled in this process, by request: compile() of an identical
// operator and options returns at once. Bounded; the oldest entry goes first.
class CompileCache {
 public:
  static CompileCache& get() {
    static CompileCache* cache = new CompileCache;  // outlives static destructors of callers
    return *cache;
  }
  std::optional<Kernel> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(key);
    return it == kernels_.end() ? std::nullopt : std::optional<Kernel>(it->second);
  }
  void add(const std::string& key, const Kernel& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!kernels_.emplace(key, k).second) return;
    order_.push_back(key);
    if (order_.size() > kCapacity) {
      kernels_.erase(order_.front());
      order_.pop_front();
    }
  }

 private:
  static constexpr size_t kCapacity = 256;
  std::mutex mutex_;
  std::map<std::string, Kernel> kernels_;
  std::deque<std::string> order_;
};

}  // namespace

void add_note(std::string& note, const std::string& text) { note += (note.empty() ? "" : "; ") + text; }

void check_compile_options(const CompileOptions& options) {
  find_strategy(options.strategy);
  LOOM_USER_CHECK(options.top_k >= 1 && options.top_k <= kMaxTopK, "top_k=", options.top_k, " is outside [1, ",
                  kMaxTopK, "]");
  LOOM_USER_CHECK(options.walk_steps >= 1 && options.walk_steps <= kMaxWalkSteps, "walk_steps=", options.walk_steps,
                  " is outside [1, ", kMaxWalkSteps, "]");
  LOOM_USER_CHECK(options.temperature >= 0.01 && options.temperature <= 100, "temperature=", options.temperature,
                  " is outside [0.01, 100]");
}

std::string options_text(const CompileOptions& o) {
  // A records file's best schedule changes as tuning appends to it: its contents are part of the request.
  std::string records = o.records;
  if (!records.empty()) records += " (" + fnv1a_hex(read_whole_file(o.records).value_or("")) + ")";
  return "strategy=" + o.strategy + " top_k=" + std::to_string(o.top_k) + " walk_steps=" +
         std::to_string(o.walk_steps) + " temperature=" + std::to_string(o.temperature) +
         " seed=" + std::to_string(o.seed) + " records=" + records;
}

std::optional<Candidate> record_candidate(const Task& task, const std::string& records, std::string& note) {
  std::vector<std::string> warnings;
  std::vector<Record> loaded = load_records(records, warnings);
  std::optional<Record> best = best_record(loaded, task);
  if (!best) {
    add_note(note, "no correct record of '" + task.workload_key + "' on hwspec '" + task.target.name + "' in " +
                       records);
    return std::nullopt;
  }
  std::string why;
  State state = replay_record(*best, task, why);
  if (!state) {
    add_note(note, "the best record of '" + task.workload_key + "' does not replay (" + why + ")");
    return std::nullopt;
  }
  add_note(note, "schedule from " + records + " (strategy " + best->strategy + ", recorded " +
                     std::to_string(best->time_ms) + " ms)");
  return make_candidate(task, state, 0);
}

std::vector<Candidate> strategy_candidates(const Task& task, const CompileOptions& options, int count) {
  const StrategyInfo& strategy = find_strategy(options.strategy);
  StrategyContext context;
  context.construct = {options.walk_steps, options.temperature, options.seed};
  context.seed = options.seed;
  if (strategy.searches) context.model = make_cost_model("analytic");
  std::vector<Candidate> candidates = strategy.make(task, context)->propose(count);
  LOOM_INTERNAL_CHECK(!candidates.empty(), "strategy ", strategy.name, " produced no candidate");
  return candidates;
}

std::vector<std::string> list_strategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table()) names.push_back(s.name);
  return names;
}

Kernel compile(const Operator& op, const CompileOptions& options) {
  check_compile_options(options);
  std::string note;
  const int threads = resolve_threads(options.threads, note);
  const HwSpec target = resolve_target(options.target);
  const std::string key = structure_text(op) + options_text(options) + " threads=" + std::to_string(threads) +
                          " hwspec=" + hwspec_fingerprint(target);
  if (std::optional<Kernel> k = CompileCache::get().find(key)) return *k;
  const Task task = make_task(op, target, threads);

  std::optional<Candidate> recorded;
  if (!options.records.empty()) {
    recorded = record_candidate(task, options.records, note);
    if (!recorded) add_note(note, "used strategy " + options.strategy);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Candidate> candidates = recorded ? std::vector<Candidate>{*recorded}
                                               : strategy_candidates(task, options, options.top_k);
  const double construct_ms = recorded ? 0 : ms_since(t0);

  // The top K are timed interleaved, side by side, and the fastest correct
  // one kept (in process: these are construction's own candidates).
  size_t best = 0;
  double measure_ms = 0;
  if (candidates.size() > 1) {
    auto t1 = std::chrono::steady_clock::now();
    MeasureOptions mo;
    mo.isolate = false;
    std::vector<MeasureResult> results = Measurer(task, mo).measure(candidates);
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].ok() && (!results[best].ok() || results[i].time_ms < results[best].time_ms)) best = i;
    LOOM_INTERNAL_CHECK(results[best].ok(), "no candidate of strategy ", options.strategy,
                        " compiled and matched the reference: ", results[best].message);
    measure_ms = ms_since(t1);
  }
  Kernel kept = compile_schedule(op, candidates[best].schedule, task.target, threads);
  CompileReport& report = mutable_report(kept);
  report.strategy = options.strategy;
  report.from_records = recorded.has_value();
  report.construct_ms = construct_ms;
  report.measure_ms = measure_ms;
  report.measured_candidates = candidates.size() > 1 ? int(candidates.size()) : 0;
  report.candidates = int(candidates.size());
  report.predicted_ms = candidates[best].predicted_s * 1e3;
  report.note = note;
  CompileCache::get().add(key, kept);
  return kept;
}

}  // namespace loom
