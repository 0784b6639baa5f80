// Strategies: how a schedule is chosen for an operator.
//
// A strategy returns ranked candidate schedules; compile() measures the top
// K when asked and keeps the fastest. Strategies are listed in one table in
// strategy.cc.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/compile.h"
#include "schedule/schedule.h"

namespace loom {

struct Candidate {
  Schedule schedule;
  double predicted_s = 0;  // analytic estimate, 0 when the strategy has none
};

struct StrategyInfo {
  const char* name;
  const char* summary;
  std::function<std::vector<Candidate>(const Operator&, const HwSpec&, const CompileOptions&)> candidates;
};

const std::vector<StrategyInfo>& strategy_table();
const StrategyInfo& find_strategy(const std::string& name);

}  // namespace loom
