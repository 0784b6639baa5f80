// tune() and tune_workload(): tasks, records, the shared cost model and the
// task scheduler put together.
#include "loom/tune.h"

#include <chrono>
#include <memory>
#include <set>

#include "driver/compile_schedule.h"
#include "driver/target.h"
#include "loom/error.h"
#include "loom/reference.h"
#include "loom/workloads.h"
#include "search/records.h"
#include "task/task_scheduler.h"
#include "task/task_tuning.h"

namespace loom {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPlayoffSize = 4;  // finalists re-measured at the end of a search, besides the incumbent

void check_options(const TuneOptions& o) {
  find_strategy(o.strategy);
  parse_schedule_policy(o.scheduler);
  LOOM_USER_CHECK(o.trials >= 1 && o.trials <= kMaxTrials, "trials=", o.trials, " is outside [1, ", kMaxTrials, "]");
  LOOM_USER_CHECK(o.batch >= 1 && o.batch <= kMaxBatch, "batch=", o.batch, " is outside [1, ", kMaxBatch, "]");
  LOOM_USER_CHECK(o.timeout_s > 0 && o.timeout_s <= 3600, "timeout_s=", o.timeout_s, " is outside (0, 3600]");
  LOOM_USER_CHECK(o.walk_steps >= 1 && o.walk_steps <= kMaxWalkSteps, "walk_steps=", o.walk_steps,
                  " is outside [1, ", kMaxWalkSteps, "]");
}

// What the tasks of one tuning job share.
struct Job {
  HwSpec target;
  int batch = 0;  // measurements per round: construction strategies spend their budget in one
  int threads = 0;  // the request's, clamped to the usable CPUs
  TuningSettings settings;
  std::vector<Record> prior;
  std::unique_ptr<RecordWriter> writer;
  std::vector<std::string> warnings;
  Clock::time_point start = Clock::now();
};

// Records of other tasks on the same spec teach the shared model before
// tuning starts; a task's own records are replayed by its TaskTuning.
void warm_start(Job& job, const std::vector<Task>& tuned) {
  if (!job.settings.context.model) return;
  const std::string fp = hwspec_fingerprint(job.target);
  auto own = [&](const Record& r) {
    for (const Task& t : tuned)
      if (r.workload == t.workload_key && r.threads == t.threads && r.strategy == job.settings.strategy) return true;
    return false;
  };
  std::map<std::pair<std::string, int>, std::vector<const Record*>> groups;
  for (const Record& r : job.prior)
    if (r.hwspec_fingerprint == fp && !own(r)) groups[{r.workload, r.threads}].push_back(&r);
  for (const auto& [key, records] : groups) {
    try {
      Task task = make_task(make_operator(records[0]->op, records[0]->params), job.target, key.second);
      std::vector<State> states;
      std::vector<MeasureResult> results;
      for (const Record* r : records) {
        std::string why;
        if (State s = replay_record(*r, task, why)) {
          states.push_back(s);
          results.push_back(measure_result(*r));
        }
      }
      job.settings.context.model->update(task, states, results);
    } catch (const UserError& e) {
      job.warnings.push_back("records of '" + key.first + "' not used: " + e.what());
    }
  }
}

Job make_job(const TuneOptions& options) {
  check_options(options);
  Job job;
  std::string note;
  job.threads = resolve_threads(options.threads, note);
  if (!note.empty()) job.warnings.push_back(note);
  job.target = resolve_target(options.target);
  job.settings.strategy = options.strategy;
  job.batch = find_strategy(options.strategy).searches ? options.batch : options.trials;
  job.settings.context.construct = {options.walk_steps, 0.3, options.seed};
  job.settings.context.seed = options.seed;
  if (find_strategy(options.strategy).searches)
    job.settings.context.model = make_cost_model(options.cost_model, options.seed);
  job.settings.measure.timeout_s = options.timeout_s;
  job.settings.measure.faults = faults_from_environment();
  if (!options.records.empty()) {
    job.prior = load_records(options.records, job.warnings);
    job.writer = std::make_unique<RecordWriter>(options.records);
  }
  return job;
}

double gflops(const Task& task, double ms) { return ms > 0 ? task.flops() / (ms * 1e6) : 0; }

TuneProgress progress_of(const TaskTuning& t, const Job& job) {
  return {t.task().workload_key, t.trials(), t.errors(), gflops(t.task(), t.best_ms()),
          std::chrono::duration<double>(Clock::now() - job.start).count()};
}

// The report of one task, with its best kernel compiled and checked on
// fresh random inputs.
TuneResult finish(TaskTuning& t, const TuneOptions& options, const Job& job) {
  if (find_strategy(options.strategy).searches) t.playoff(kPlayoffSize);
  const Task& task = t.task();
  TuneResult out;
  TuneReport& r = out.report;
  r.op = task.op.name;
  r.params = task.op.params;
  r.strategy = options.strategy;
  r.hwspec = task.target.name;
  r.workload_key = task.workload_key;
  r.threads = task.threads;
  r.trials = options.trials;
  r.resumed = t.resumed();
  r.measured = t.trials() - t.resumed();
  r.errors = t.errors();
  r.construct_ms = t.construct_ms();
  r.seed_gflops = gflops(task, t.seed_ms());
  r.best_time_ms = t.best_ms();
  r.best_gflops = gflops(task, t.best_ms());
  r.records = options.records;
  r.warnings = job.warnings;
  for (const CurvePoint& p : t.curve()) r.curve.push_back({p.trials, p.seconds, gflops(task, p.best_ms)});
  if (t.best()) {
    out.kernel = compile_schedule(task.op, t.best()->schedule, task.target, task.threads);
    r.best_schedule = out.kernel.report().schedule;
    std::vector<Buffer> inputs = random_inputs(task.op, /*seed=*/42, task.plan_sizes);
    std::vector<Buffer> outputs;
    for (const auto& shape : output_shapes(task.op, inputs)) outputs.push_back(Buffer::allocate(shape));
    out.kernel.run(inputs, outputs);
    CheckResult check = check_against_reference(task.op, inputs, outputs);
    r.max_rel_err = check.max_rel_err;
    r.ok = check.ok;
  }
  r.tune_s = std::chrono::duration<double>(Clock::now() - job.start).count();
  return out;
}

}  // namespace

TuneResult tune(const Operator& op, const TuneOptions& options,
                const std::function<void(const TuneProgress&)>& on_round) {
  Job job = make_job(options);
  Task task = make_task(op, job.target, job.threads);
  warm_start(job, {task});
  TaskTuning t(std::move(task), job.settings, job.writer.get(), job.prior, job.start);
  while (t.trials() < options.trials) {
    if (t.round(std::min(job.batch, options.trials - t.trials())) == 0) break;
    if (on_round) on_round(progress_of(t, job));
  }
  return finish(t, options, job);
}

WorkloadTuneReport tune_workload(const std::string& workload, const TuneOptions& options,
                                 const std::function<void(const TuneProgress&)>& on_round) {
  Job job = make_job(options);
  std::vector<WorkloadTask> entries = workload_tasks(workload);
  std::vector<Task> tasks;
  for (const WorkloadTask& e : entries)
    tasks.push_back(make_task(make_operator(e.op, e.params), job.target, job.threads, e.weight));
  warm_start(job, tasks);
  std::vector<std::unique_ptr<TaskTuning>> tunings;
  std::vector<TaskTuning*> pointers;
  for (Task& task : tasks) {
    tunings.push_back(std::make_unique<TaskTuning>(std::move(task), job.settings, job.writer.get(), job.prior,
                                                   job.start));
    pointers.push_back(tunings.back().get());
  }
  // A construction strategy proposes once per task: each gets its share.
  const int batch = find_strategy(options.strategy).searches ? job.batch
                                                               : std::max(1, options.trials / int(pointers.size()));
  run_task_scheduler(pointers, options.trials, batch, parse_schedule_policy(options.scheduler),
                     [&](const TaskTuning& t) {
                       if (on_round) on_round(progress_of(t, job));
                     });
  WorkloadTuneReport report;
  report.workload = workload;
  report.scheduler = options.scheduler;
  report.strategy = options.strategy;
  report.hwspec = job.target.name;
  report.trials = options.trials;
  report.warnings = job.warnings;
  report.ok = true;
  for (size_t i = 0; i < tunings.size(); ++i) {
    TuneReport r = finish(*tunings[i], options, job).report;
    r.trials = tunings[i]->trials();
    report.threads = r.threads;
    report.weighted_total_ms += entries[i].weight * r.best_time_ms;
    report.ok &= r.ok;
    report.weights.push_back({entries[i].label, entries[i].weight});
    report.tasks.push_back({entries[i].label, r});
  }
  report.tune_s = std::chrono::duration<double>(Clock::now() - job.start).count();
  return report;
}

}  // namespace loom
