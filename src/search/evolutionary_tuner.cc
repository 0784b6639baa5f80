#include "search/evolutionary_tuner.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "construct/analytic_model.h"

namespace loom {

namespace {

struct StateHash {
  size_t operator()(const State& s) const { return s->hash(); }
};
struct StateEq {
  bool operator()(const State& a, const State& b) const { return *a == *b; }
};
using StateSet = std::unordered_set<State, StateHash, StateEq>;

// Random-walk samples from the initial state, distinct, up to `n`.
std::vector<State> random_states(const Task& task, int n, Rng& rng, StateSet& seen) {
  State init = initial_state(*task.anchor, task.target);
  std::vector<State> out;
  for (int tries = 0; int(out.size()) < n && tries < 8 * n; ++tries) {
    State s = random_walk(task, init, std::uniform_int_distribution<int>(4, 64)(rng), rng);
    if (seen.insert(s).second) out.push_back(s);
  }
  return out;
}

Candidate candidate_for(const Task& task, const State& s) {
  return make_candidate(task, s, estimate(*task.anchor, *s, task.target, task.threads).seconds);
}

class EvolutionaryTuner : public Tuner {
 public:
  EvolutionaryTuner(const Task& task, std::shared_ptr<CostModel> model, const EvolutionOptions& options)
      : task_(task), model_(std::move(model)), options_(options), rng_(options.seed) {}

  std::vector<Candidate> propose(int n) override {
    std::vector<State> picked;
    if (first_round_) picked = first_round(n);
    first_round_ = false;
    if (picked.empty()) picked = evolve(n);
    std::vector<Candidate> out;
    for (const State& s : picked) {
      proposed_.insert(s);
      out.push_back(candidate_for(task_, s));
    }
    return out;
  }

  void observe(const std::vector<Candidate>& candidates, const std::vector<MeasureResult>& results) override {
    std::vector<State> states;
    for (size_t i = 0; i < candidates.size(); ++i) {
      states.push_back(candidates[i].state);
      proposed_.insert(candidates[i].state);  // also what was measured before a resume
      if (results[i].ok()) measured_.push_back({candidates[i].state, results[i].time_ms});
    }
    model_->update(task_, states, results);
    std::sort(measured_.begin(), measured_.end(), [](auto& x, auto& y) { return x.second < y.second; });
  }

 private:
  // Hybrid: construction's top-n as they are. Search: nothing is known, so
  // the first round is random samples.
  std::vector<State> first_round(int n) {
    if (options_.construction_seeded) {
      std::vector<State> out;
      for (const RankedState& r : construct_states(task_, std::max(n, 2 * n), options_.construct)) {
        seeds_.push_back(r.state);
        if (int(out.size()) < n && !proposed_.count(r.state)) out.push_back(r.state);
      }
      return out;
    }
    StateSet seen = proposed_;
    return random_states(task_, n, rng_, seen);
  }

  std::vector<double> scores(const std::vector<State>& states) {
    if (!options_.construction_seeded && !model_->trained()) {
      std::vector<double> r(states.size());
      for (double& x : r) x = std::uniform_real_distribution<double>(0, 1)(rng_);
      return r;
    }
    return model_->predict(task_, states);
  }

  // The starting population: the best measured states (up to a fifth),
  // then the seeds (hybrid) or fresh random samples (search).
  std::vector<State> initial_population() {
    StateSet seen;
    std::vector<State> pop;
    for (size_t i = 0; i < measured_.size() && int(pop.size()) < options_.population / 5; ++i)
      if (seen.insert(measured_[i].first).second) pop.push_back(measured_[i].first);
    for (const State& s : seeds_)
      if (int(pop.size()) < options_.population && seen.insert(s).second) pop.push_back(s);
    for (const State& s : random_states(task_, options_.population - int(pop.size()), rng_, seen)) pop.push_back(s);
    return pop;
  }

  // Tournament of three on scores.
  size_t pick_parent(const std::vector<double>& score) {
    std::uniform_int_distribution<size_t> any(0, score.size() - 1);
    size_t best = any(rng_);
    for (int i = 0; i < 2; ++i) {
      size_t c = any(rng_);
      if (score[c] > score[best]) best = c;
    }
    return best;
  }

  std::vector<State> evolve(int n) {
    std::vector<State> pop = initial_population();
    std::vector<double> score = scores(pop);
    StateSet seen(pop.begin(), pop.end());
    std::vector<std::pair<State, double>> pool;  // every unmeasured state scored, for the final pick
    auto consider = [&](const State& s, double sc) {
      if (!proposed_.count(s)) pool.push_back({s, sc});
    };
    for (size_t i = 0; i < pop.size(); ++i) consider(pop[i], score[i]);
    std::bernoulli_distribution mutation(options_.mutation_probability);
    for (int g = 0; g < options_.generations && !pop.empty(); ++g) {
      std::vector<State> children;
      for (int i = 0; i < options_.population; ++i) {
        State child = mutation(rng_) || pop.size() < 2
                          ? mutate(task_, pop[pick_parent(score)], rng_)
                          : crossover(task_, *pop[pick_parent(score)], *pop[pick_parent(score)], rng_);
        if (child && seen.insert(child).second) children.push_back(child);
      }
      std::vector<double> child_score = scores(children);
      for (size_t i = 0; i < children.size(); ++i) consider(children[i], child_score[i]);
      // (mu + lambda): the best-scored of parents and children survive.
      pop.insert(pop.end(), children.begin(), children.end());
      score.insert(score.end(), child_score.begin(), child_score.end());
      std::vector<size_t> idx(pop.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return score[x] > score[y]; });
      idx.resize(std::min(idx.size(), size_t(options_.population)));
      std::vector<State> next_pop;
      std::vector<double> next_score;
      for (size_t i : idx) {
        next_pop.push_back(pop[i]);
        next_score.push_back(score[i]);
      }
      pop.swap(next_pop);
      score.swap(next_score);
    }
    std::stable_sort(pool.begin(), pool.end(), [](auto& x, auto& y) { return x.second > y.second; });
    std::vector<State> out;
    std::bernoulli_distribution explore(options_.eps_greedy);
    size_t next_best = 0;
    StateSet taken;
    while (int(out.size()) < n && next_best < pool.size()) {
      size_t i = next_best;
      if (explore(rng_)) i = std::uniform_int_distribution<size_t>(next_best, pool.size() - 1)(rng_);
      else ++next_best;
      if (taken.insert(pool[i].first).second) out.push_back(pool[i].first);
    }
    return out;
  }

  const Task& task_;
  std::shared_ptr<CostModel> model_;
  EvolutionOptions options_;
  Rng rng_;
  bool first_round_ = true;
  std::vector<State> seeds_;
  std::vector<std::pair<State, double>> measured_;  // ok measurements, fastest first
  StateSet proposed_;
};

class RandomTuner : public Tuner {
 public:
  RandomTuner(const Task& task, uint64_t seed) : task_(task), rng_(seed) {}
  std::vector<Candidate> propose(int n) override {
    std::vector<Candidate> out;
    for (const State& s : random_states(task_, n, rng_, seen_)) out.push_back(candidate_for(task_, s));
    return out;
  }

 private:
  const Task& task_;
  Rng rng_;
  StateSet seen_;
};

}  // namespace

std::unique_ptr<Tuner> make_evolutionary_tuner(const Task& task, std::shared_ptr<CostModel> model,
                                               const EvolutionOptions& options) {
  return std::make_unique<EvolutionaryTuner>(task, std::move(model), options);
}

std::unique_ptr<Tuner> make_random_tuner(const Task& task, uint64_t seed) {
  return std::make_unique<RandomTuner>(task, seed);
}

}  // namespace loom
