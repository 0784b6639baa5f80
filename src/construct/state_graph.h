// The schedule-state graph and its Markov-guided traversal.
//
// Vertices are schedule states, deduplicated by structural hash; edges are
// primitive applications (schedule/step.h). The graph is explored lazily
// from seed states: a vertex's out-edges are created the first time a walk
// stands on it. Several paths reach the same state and steps can be undone
// (grow then shrink), so it is a graph with cycles, not a tree.
//
// Transition probabilities come from the analytic model with several
// objectives rather than one score. For an edge s -> n and objectives o_k
// (compute time, traffic time into each cache level, packing and penalty
// time, 1/parallel balance):
//   score(s, n) = log(t(s)/t(n)) + sum_k w_k(s) log(o_k(s)/o_k(n)),
//   w_k(s)      = o_k(s) / sum_j o_j(s)        (the bottleneck counts most),
//   P(s -> n)   = softmax over legal out-edges of score / temperature.
// Random walks with restarts follow these probabilities; a walk restarts at
// a seed, or at a state drawn from the stationary distribution of the chain
// explored so far (computed with Eigen by power iteration, unexplored mass
// teleporting to the seeds). After the budget, the best few states on a CPU
// (and the best of each vector axis they leave out) get the register block
// the model rates best for their cache tiles (best_register_block below),
// and descend from there to the nearest state no step or trade improves
// (descend below), as states of their own; every state seen is ranked by
// predicted time and the top K distinct states are emitted, at most two per
// micro-kernel shape before the rest fill in (so that measuring the top K
// compares different designs). Everything is deterministic for a seed.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "construct/analytic_model.h"
#include "loom/compile.h"
#include "schedule/anchor.h"
#include "schedule/state.h"

namespace loom {

struct TraversalOptions {
  int top_k = 10;
  int walk_steps = kDefaultWalkSteps;
  double temperature = 0.3;
  double restart_probability = 0.05;
  uint64_t seed = 1;
  int threads = 1;
};

struct RankedState {
  State state;
  Estimate estimate;
};

struct TraversalResult {
  std::vector<RankedState> top;  // best first
  int vertices = 0;
  int edges = 0;
  int steps_taken = 0;
};

// The model's time for each state one construction weighs, computed once:
// the register-block sweeps and descents from nearby states cross the same
// states (6 in 10 of a 3x3 convolution's sweep estimates were repeats).
class EstimateMemo {
 public:
  EstimateMemo(const AnchorInfo& anchor, const HwSpec& target, int threads)
      : anchor_(anchor), target_(target), threads_(threads) {}
  double seconds(const State& s);
  const AnchorInfo& anchor() const { return anchor_; }
  const HwSpec& target() const { return target_; }
  int threads() const { return threads_; }

 private:
  struct Hash {
    size_t operator()(const State& s) const { return s->hash(); }
  };
  struct Same {
    bool operator()(const State& a, const State& b) const { return *a == *b; }
  };
  const AnchorInfo& anchor_;
  const HwSpec& target_;
  int threads_;
  std::unordered_map<State, double, Hash, Same> seconds_;
};

TraversalResult traverse_state_graph(const AnchorInfo& anchor, const HwSpec& target,
                                     const std::vector<State>& seeds, const TraversalOptions& options);
// The same, polishing with `memo` (for options.threads), which the caller
// keeps weighing its own states with.
TraversalResult traverse_state_graph(const std::vector<State>& seeds, const TraversalOptions& options,
                                     EstimateMemo& memo);

// The register block the model rates best among those reachable from `s` by
// growing and shrinking its register tile along the vector axis and the
// spatial axis with the most register rows (the largest extent among
// equals), or along every spatial axis where an operand is broadcast across
// the lanes. The register file bounds them, so the search is small, and it
// crosses what single steps cannot: 8x8 to 6x16 passes through blocks with
// too few accumulators to hide the FMA latency. The cache tiles follow the
// register tile as the steps define. CPU states only.
State best_register_block(const State& s, EstimateMemo& memo);

// Steepest descent from `from` on the model's estimate: each move takes the
// best of every single step and every trade, a cache tile shrinking along
// one axis and growing along another (a reduction block that doubles while
// the tile of outputs it serves halves keeps a packed panel within its
// cache, which neither step does alone), until none gains. The walk alone
// left GEMMs and 1x1 convolutions on reduction blocks of 32 steps whose
// descent runs 1.1-1.4x faster (2048x768x768, 7x7 2048->512).
State descend(const State& from, EstimateMemo& memo);

// `s` blocked as Goto's GEMM, from its register tile and vector axis (the
// walk's best, after best_register_block). A micro-kernel call is one
// register tile over a reduction block; the operands that do not move
// along the vector axis (a GEMM's A sliver) take at most half of the
// innermost cache and stay there while the loop over the vector axis's
// tiles, inside the loops over the other spatial axes, streams the other
// operands (B) past them, packed once per outer tile into a panel (the
// vector axis's tile by the reduction block) within half of the next cache;
// the other spatial axes' outer tile fills a quarter of it. Descent sizes it
// from there. The walk seldom reaches it: it takes a dozen steps, most of
// which the model rates worse alone, and the walk's GEMMs kept B's panel in
// L1 and streamed A from L2 and L3, 1.2-1.3x slower (measured: dense
// 2048x768x3072 and 1024^3 GEMMs, one core). `s` unchanged where there is
// no second private cache, the vector axis is not spatial, or no operand is
// left to broadcast (a depthwise convolution's all move with the channels).
State panel_variant(State s, const AnchorInfo& anchor, const HwSpec& target);

// Hardware-aware starting points: the initial state, and one with the
// vector axis and a register block sized from the hwspec (enough
// accumulators to cover FMA latency x FMA units, within the register file).
std::vector<State> seed_states(const AnchorInfo& anchor, const HwSpec& target);

}  // namespace loom
