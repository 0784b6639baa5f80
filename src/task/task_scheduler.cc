#include "task/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/error.h"

namespace loom {

namespace {

constexpr double kAlpha = 0.2, kBeta = 2.0;
constexpr int kWindow = 3;

int flops_bucket(double flops) { return int(std::floor(std::log(std::max(flops, 1.0)) / std::log(1.618))); }

bool similar(const TaskStats& a, const TaskStats& b) {
  return a.op == b.op && flops_bucket(a.flops) == flops_bucket(b.flops);
}

double best_of(const TaskStats& t) { return t.history.empty() ? 0 : t.history.back(); }

}  // namespace

SchedulePolicy parse_schedule_policy(const std::string& name) {
  if (name == "gradient") return SchedulePolicy::Gradient;
  if (name == "round-robin") return SchedulePolicy::RoundRobin;
  throw UserError("unknown scheduler '" + name + "' (known: gradient, round-robin)");
}

TaskStats stats_of(const TaskTuning& t) {
  return {t.task().op.name, t.task().flops(), t.task().weight, t.history(), t.exhausted()};
}

size_t pick_by_gradient(const std::vector<TaskStats>& tasks) {
  size_t pick = tasks.size();
  double most_negative = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskStats& t = tasks[i];
    if (t.exhausted) continue;
    const std::vector<double>& h = t.history;
    const double g = best_of(t);
    if (g <= 0) return i;  // never measured well: tune it first
    const int rounds = int(h.size());
    const double backward = rounds > kWindow ? (h.back() - h[size_t(rounds - 1 - kWindow)]) / kWindow
                                             : (h.back() - h.front()) / std::max(1, rounds - 1);
    double best_speed = 0;  // FLOP per ms of the fastest similar task
    for (const TaskStats& o : tasks)
      if (best_of(o) > 0 && similar(t, o)) best_speed = std::max(best_speed, o.flops / best_of(o));
    double forward = -g / rounds;
    if (best_speed > 0) forward = std::min(forward, kBeta * t.flops / best_speed - g);
    const double grad = t.weight * (kAlpha * backward + (1 - kAlpha) * forward);
    if (grad < most_negative) {
      most_negative = grad;
      pick = i;
    }
  }
  return pick;
}

void run_task_scheduler(std::vector<TaskTuning*>& tasks, int trials, int batch, SchedulePolicy policy,
                        const std::function<void(const TaskTuning&)>& after_round) {
  int spent = 0;
  for (const TaskTuning* t : tasks) spent += t->trials() - t->resumed();
  auto run = [&](TaskTuning& t) {
    const int n = t.round(std::min(batch, trials - spent));
    spent += n;
    if (n > 0 && after_round) after_round(t);
    return n;
  };
  // Warm-up: every task once, in order (a resumed task has its history already).
  for (TaskTuning* t : tasks)
    if (spent < trials && t->rounds() == 0 && t->best_ms() <= 0) run(*t);
  size_t next = 0;
  while (spent < trials) {
    size_t pick = tasks.size();
    if (policy == SchedulePolicy::Gradient) {
      std::vector<TaskStats> stats;
      for (const TaskTuning* t : tasks) stats.push_back(stats_of(*t));
      pick = pick_by_gradient(stats);
    } else {
      for (size_t k = 0; k < tasks.size() && pick == tasks.size(); ++k)
        if (!tasks[(next + k) % tasks.size()]->exhausted()) pick = (next + k) % tasks.size();
      next = pick + 1;
    }
    if (pick == tasks.size()) break;  // every task exhausted
    run(*tasks[pick]);
  }
}

}  // namespace loom
