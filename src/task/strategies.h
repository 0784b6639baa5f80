// The strategy table: every way loom chooses schedules, by name.
//
// Each strategy makes a Tuner (schedule/tuner.h) for a task. Construction
// strategies propose once; search strategies learn from measurements
// through the shared cost model. compile() and the task scheduler find
// strategies here and nowhere else.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "construct/construct.h"
#include "schedule/tuner.h"
#include "search/cost_model.h"

namespace loom {

struct StrategyContext {
  ConstructOptions construct;
  uint64_t seed = 1;
  std::shared_ptr<CostModel> model;  // shared by a job's tasks; search strategies only
};

struct StrategyInfo {
  const char* name;
  const char* summary;
  bool searches;  // proposes round after round and needs a cost model
  std::function<std::unique_ptr<Tuner>(const Task&, const StrategyContext&)> make;
};

const std::vector<StrategyInfo>& strategy_table();
// UserError listing the known names when `name` is none of them.
const StrategyInfo& find_strategy(const std::string& name);

}  // namespace loom
