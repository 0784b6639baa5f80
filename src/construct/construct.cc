#include "construct/construct.h"

#include <algorithm>

#include "construct/roller.h"

namespace loom {

std::vector<RankedState> construct_states(const Task& task, int k, const ConstructOptions& options) {
  const AnchorInfo& anchor = *task.anchor;
  TraversalOptions t;
  t.top_k = std::max(1, k);
  t.walk_steps = options.walk_steps;
  t.temperature = options.temperature;
  t.seed = options.seed;
  t.threads = task.threads;
  // Seeds: the rule-based starting points and the Roller tree's best leaf;
  // the multi-objective walk refines from all of them.
  std::vector<State> seeds = seed_states(anchor, task.target);
  for (const State& s : roller_states(anchor, task.target, t.threads, 1)) seeds.push_back(s);
  return traverse_state_graph(anchor, task.target, seeds, t).top;
}

std::unique_ptr<Tuner> make_construct_tuner(const Task& task, const ConstructOptions& options) {
  return std::make_unique<ProposeOnceTuner>([&task, options](int n) {
    std::vector<Candidate> out;
    for (const RankedState& r : construct_states(task, n, options))
      out.push_back(make_candidate(task, r.state, r.estimate.seconds));
    return out;
  });
}

}  // namespace loom
