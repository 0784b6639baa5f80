#include "search/state_moves.h"

#include "schedule/path.h"
#include "schedule/step.h"

namespace loom {

namespace {

// A uniformly chosen legal step from `s`, or null when none of a few tries is legal.
State random_step(const Task& task, const StateData& s, Rng& rng) {
  std::vector<Step> steps = candidate_steps(s, *task.anchor, task.target);
  for (int tries = 0; tries < 16 && !steps.empty(); ++tries) {
    size_t i = std::uniform_int_distribution<size_t>(0, steps.size() - 1)(rng);
    StepResult r = apply_step(s, steps[i], *task.anchor, task.target);
    if (r) return r.state;
    steps[i] = steps.back();
    steps.pop_back();
  }
  return nullptr;
}

}  // namespace

State random_walk(const Task& task, const State& from, int steps, Rng& rng) {
  State s = from;
  for (int i = 0; i < steps; ++i)
    if (State next = random_step(task, *s, rng)) s = next;
  return s;
}

State mutate(const Task& task, const State& parent, Rng& rng) {
  const int steps = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? std::uniform_int_distribution<int>(2, 4)(rng)
                                                                         : 1;
  State s = random_walk(task, parent, steps, rng);
  return *s == *parent ? nullptr : s;
}

State crossover(const Task& task, const StateData& a, const StateData& b, Rng& rng) {
  std::bernoulli_distribution coin(0.5);
  StateData child = a;
  child.trail.reset();
  child.order = OrderTable(a.num_axes);
  for (int l = 0; l < a.levels(); ++l) {
    const StateData& from = coin(rng) ? a : b;
    for (int x = 0; x < a.num_axes; ++x) child.tile[l][x] = from.tile[l][x];
    child.order.add_level(from.order[l]);
  }
  const StateData& vec = coin(rng) ? a : b;
  child.vec_axis = vec.vec_axis;
  child.vec_width = vec.vec_width;
  child.unroll = (coin(rng) ? a : b).unroll;
  child.pack = (coin(rng) ? a : b).pack;
  child.fuse = (coin(rng) ? a : b).fuse;
  child.materialize = (coin(rng) ? a : b).materialize;
  if (child == a || child == b || legality(child, *task.anchor, task.target)) return nullptr;
  return state_with_path(*task.anchor, task.target, child);
}

}  // namespace loom
