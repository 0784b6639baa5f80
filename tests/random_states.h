// Random legal schedule states: a random walk over the primitives from one
// of construction's seed states, every step legal. Shared by the CPU and
// GPU state tests.
#pragma once

#include <random>
#include <vector>

#include "construct/state_graph.h"
#include "schedule/anchor.h"
#include "schedule/step.h"

namespace loom::test {

inline State random_state(const AnchorInfo& anchor, const HwSpec& hw, std::mt19937_64& rng, int length) {
  std::vector<State> seeds = seed_states(anchor, hw);
  State s = seeds[rng() % seeds.size()];
  for (int i = 0; i < length; ++i) {
    std::vector<State> legal;
    for (const Step& step : candidate_steps(*s, anchor, hw))
      if (StepResult r = apply_step(*s, step, anchor, hw)) legal.push_back(r.state);
    if (legal.empty()) break;
    s = legal[rng() % legal.size()];
  }
  return s;
}

}  // namespace loom::test
