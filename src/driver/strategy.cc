#include "driver/strategy.h"

#include "construct/construct.h"
#include "construct/roller.h"
#include "loom/error.h"

namespace loom {

const std::vector<StrategyInfo>& strategy_table() {
  static const std::vector<StrategyInfo> table = {
      {"default", "parallel outer loops, vectorized innermost axis, no tiling",
       [](const Operator& op, const HwSpec& hw, const CompileOptions&) {
         return std::vector<Candidate>{{default_schedule(op, hw), 0}};
       }},
      {"construct", "Markov-guided traversal of the schedule-state graph under the analytic model",
       construct_candidates},
      {"roller", "Roller-style tree construction: grow tiles by data reuse, level by level",
       roller_candidates},
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
