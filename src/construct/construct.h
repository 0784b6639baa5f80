// The `construct` strategy: Markov-guided traversal of the state graph.
#pragma once

#include <cstdint>
#include <vector>

#include "construct/state_graph.h"
#include "schedule/tuner.h"

namespace loom {

struct ConstructOptions {
  int walk_steps = kDefaultWalkSteps;
  double temperature = 0.3;
  uint64_t seed = 1;
};

// The top-k states of the traversal from the rule-based seeds and the
// Roller tree's best leaf, best first, with the model's estimates.
std::vector<RankedState> construct_states(const Task& task, int k, const ConstructOptions& options);

// Proposes construction's top-n once.
std::unique_ptr<Tuner> make_construct_tuner(const Task& task, const ConstructOptions& options);

}  // namespace loom
