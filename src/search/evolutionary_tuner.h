// Evolutionary search under a cost model: the `hybrid` and `search` strategies.
//
// Each round (after the first) evolves a population for a few generations:
// children come from mutation (a random edge of the state graph, or a short
// jump; probability 0.85) or crossover (per-level tiles and loop orders from
// two parents, which Ansor never shipped); parents are picked by tournament
// on the cost model's score; the population keeps the best-scored of
// parents and children. The round proposes the best-scored states not yet
// measured, and with probability eps a random one instead (eps-greedy).
// Every measurement updates the model; the best measured states rejoin the
// population each round.
//
// The two strategies differ only in where the population starts:
//   hybrid: construction's top states; the first round measures
//           construction's top-n as they are, so refinement never loses
//           what construction found; an untrained model scores with the
//           analytic model.
//   search: random walks from the initial state, as Ansor samples its
//           sketches; an untrained model scores at random (no prior).
#pragma once

#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "construct/construct.h"
#include "schedule/tuner.h"
#include "search/cost_model.h"
#include "search/state_moves.h"

namespace loom {

struct EvolutionOptions {
  bool construction_seeded = true;  // hybrid (true) or search (false)
  ConstructOptions construct;       // for the hybrid's seeds
  int population = 128;
  int generations = 4;
  double mutation_probability = 0.85;
  double eps_greedy = 0.05;
  uint64_t seed = 1;
};

std::unique_ptr<Tuner> make_evolutionary_tuner(const Task& task, std::shared_ptr<CostModel> model,
                                               const EvolutionOptions& options);

// The `random` strategy: uniformly random walks of random length (4-64
// steps) from the initial state, measured as they come; no model.
std::unique_ptr<Tuner> make_random_tuner(const Task& task, uint64_t seed);

}  // namespace loom
