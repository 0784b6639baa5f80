#include "task/strategies.h"

#include "construct/roller.h"
#include "loom/error.h"
#include "search/evolutionary_tuner.h"

namespace loom {

namespace {

std::unique_ptr<Tuner> evolutionary(const Task& task, const StrategyContext& c, bool construction_seeded) {
  EvolutionOptions e;
  e.construction_seeded = construction_seeded;
  e.construct = c.construct;
  e.seed = c.seed;
  return make_evolutionary_tuner(task, c.model, e);
}

}  // namespace

const std::vector<StrategyInfo>& strategy_table() {
  static const std::vector<StrategyInfo> table = {
      {"default", "parallel outer loops, vectorized innermost axis, no tiling", false,
       [](const Task& task, const StrategyContext&) -> std::unique_ptr<Tuner> {
         return std::make_unique<ProposeOnceTuner>([&task](int) {
           return std::vector<Candidate>{{nullptr, default_schedule(task.op, task.target), 0}};
         });
       }},
      {"construct", "Markov-guided traversal of the schedule-state graph under the analytic model", false,
       [](const Task& task, const StrategyContext& c) { return make_construct_tuner(task, c.construct); }},
      {"roller", "Roller-style tree construction: grow tiles by data reuse, level by level", false,
       [](const Task& task, const StrategyContext&) { return make_roller_tuner(task); }},
      {"hybrid", "construction's top states refined by evolution under the learned cost model", true,
       [](const Task& task, const StrategyContext& c) { return evolutionary(task, c, true); }},
      {"search", "Ansor-like: random-walk samples refined by evolution under the learned cost model", true,
       [](const Task& task, const StrategyContext& c) { return evolutionary(task, c, false); }},
      {"random", "random legal states, measured as sampled", true,
       [](const Task& task, const StrategyContext& c) { return make_random_tuner(task, c.seed); }},
  };
  return table;
}

const StrategyInfo& find_strategy(const std::string& name) {
  for (const StrategyInfo& s : strategy_table())
    if (name == s.name) return s;
  std::string known;
  for (const StrategyInfo& s : strategy_table()) known += (known.empty() ? "" : ", ") + std::string(s.name);
  throw UserError("unknown strategy '" + name + "' (known: " + known + ")");
}

}  // namespace loom
