// Moves in the state space for search: random walks, mutation, crossover.
//
// Every move goes along the graph's edges (schedule/step.h) or, for
// crossover, builds a state field by field and finds a step path to it, so
// each state search produces replays from the initial state like any other.
// An illegal move is an ordinary outcome: the functions return null.
#pragma once

#include <random>

#include "schedule/state.h"
#include "schedule/task.h"

namespace loom {

using Rng = std::mt19937_64;

// `steps` uniformly chosen legal steps from `from`.
State random_walk(const Task& task, const State& from, int steps, Rng& rng);

// One random legal step, or (one time in four) a short jump of 2-4 steps.
State mutate(const Task& task, const State& parent, Rng& rng);

// A child taking each level's tiles and loop order from one parent or the
// other, and the vector axis, unroll, packing and fusion from either; null
// when the mix is illegal or unreachable.
State crossover(const Task& task, const StateData& a, const StateData& b, Rng& rng);

}  // namespace loom
