// The task scheduler: one measurement budget shared by a workload's tasks.
//
// After a warm-up round on every task, each round goes to the task whose
// gradient of the workload's objective f = sum_i w_i g_i (g_i the task's
// best time, w_i how often it occurs) is most negative, as in Ansor:
//   backward_i = (g_i[t] - g_i[t-3]) / 3          (over the task's last rounds)
//   forward_i  = min(-g_i / t_i, beta * C_i / max_k V_k - g_i)
//   grad_i     = w_i * (alpha * backward_i + (1 - alpha) * forward_i)
// with C_i the task's flops, V_k the best throughput of similar tasks (same
// operator and log_1.618(flops) bucket), alpha = 0.2, beta = 2. The
// round-robin policy, the baseline, gives the tasks rounds in turn.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "task/task_tuning.h"

namespace loom {

enum class SchedulePolicy { Gradient, RoundRobin };
// "gradient" or "round-robin"; UserError for anything else.
SchedulePolicy parse_schedule_policy(const std::string& name);

// Spends about `trials` measurements over `tasks` in rounds of `batch`;
// `after_round` is called with the task that just ran a round.
void run_task_scheduler(std::vector<TaskTuning*>& tasks, int trials, int batch, SchedulePolicy policy,
                        const std::function<void(const TaskTuning&)>& after_round);

// What the gradient policy reads of a task.
struct TaskStats {
  std::string op;               // operator name (similarity)
  double flops = 0;
  double weight = 1;
  std::vector<double> history;  // best time after each of its rounds (0: none yet)
  bool exhausted = false;
};
TaskStats stats_of(const TaskTuning& t);

// The index of the task to tune next under the gradient policy;
// tasks.size() when every task is exhausted.
size_t pick_by_gradient(const std::vector<TaskStats>& tasks);

}  // namespace loom
