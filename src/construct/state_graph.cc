#include "construct/state_graph.h"

#include <Eigen/SparseCore>
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "loom/error.h"

namespace loom {

namespace {

// A vertex keeps its state only once the walk stands on it (or it is
// emitted): most vertices are steps weighed from an expanded state and never
// taken, and keep only how to rebuild them (the step from their first
// parent), so construction touches a fraction of the memory (fresh pages
// cost microseconds each).
struct VertexData {
  State state;  // null until needed
  size_t parent = 0;
  Step step{StepKind::TileGrow};
  Estimate estimate;
  bool expanded = false;
};

// How well an axis suits the vector lanes: unit-stride accesses count for
// it, gathers against it.
int vector_affinity(const AnchorInfo& anchor, int axis) {
  int score = 0;
  for (const Access& x : anchor.accesses) {
    if (!x.uses_axis[axis]) continue;
    if (x.stride[axis] == 1) score += 2;
    else score -= 2;
  }
  if (axis == anchor.num_spatial - 1) score += 3;  // the output is contiguous along it
  else if (!anchor.is_reduce_axis(axis)) score -= 3;
  return score;
}

// Whether `step` resizes a parallel tile on one thread: it changes nothing.
bool moves_parallel_tile_alone(const Step& step, int threads) {
  return threads == 1 && (step.kind == StepKind::TileGrow || step.kind == StepKind::TileShrink) && step.a == 0;
}

struct EdgeData {
  Step step{StepKind::TileGrow};
  double probability = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexData, EdgeData>;
using Vertex = Graph::vertex_descriptor;

class Traversal {
 public:
  Traversal(const TraversalOptions& options, EstimateMemo& memo)
      : anchor_(memo.anchor()), target_(memo.target()), options_(options), memo_(memo), rng_(options.seed) {
    LOOM_INTERNAL_CHECK(memo.threads() == options.threads, "an estimate memo for ", memo.threads(),
                        " threads polishing a traversal for ", options.threads);
  }

  TraversalResult run(const std::vector<State>& seeds) {
    for (const State& s : seeds) seeds_.push_back(vertex_for(s, std::nullopt));
    Vertex current = seeds_.front();
    int taken = 0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int step = 0; step < options_.walk_steps; ++step) {
      expand(current);
      auto [begin, end] = boost::out_edges(current, graph_);
      if (begin == end || unit(rng_) < options_.restart_probability) {
        current = restart_vertex(step);
        continue;
      }
      double pick = unit(rng_), acc = 0;
      Vertex next = boost::target(*begin, graph_);
      for (auto it = begin; it != end; ++it) {
        acc += graph_[*it].probability;
        if (pick <= acc) {
          next = boost::target(*it, graph_);
          break;
        }
      }
      current = next;
      ++taken;
    }
    polish();
    const std::vector<Vertex> all = by_estimate();
    // Emit the best states, at most two per micro-kernel shape (register
    // tile and vector axis) at first, so that measuring the top K compares
    // different kernel designs, not ten variants of one; then fill up.
    TraversalResult result;
    std::map<std::vector<int64_t>, int> per_shape;
    std::vector<bool> chosen(all.size(), false);
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < all.size() && int(result.top.size()) < options_.top_k; ++i) {
        const StateData& st = *state_of(all[i]);
        std::vector<int64_t> shape = st.tile.row(st.reg_level());
        shape.push_back(st.vec_axis);
        if (chosen[i] || (pass == 0 && per_shape[shape]++ >= 2)) continue;
        chosen[i] = true;
        result.top.push_back({graph_[all[i]].state, graph_[all[i]].estimate});
      }
    result.vertices = int(boost::num_vertices(graph_));
    result.edges = int(boost::num_edges(graph_));
    result.steps_taken = taken;
    return result;
  }

 private:
  // The `count` best predicted vertices (all when fewer), best first; ties
  // in the order they were added.
  std::vector<Vertex> by_estimate(size_t count = SIZE_MAX) const {
    // Sorted as (seconds, vertex) pairs side by side: the vertices' data
    // lie far apart.
    std::vector<std::pair<double, Vertex>> keyed(boost::num_vertices(graph_));
    for (Vertex v = 0; v < keyed.size(); ++v) keyed[v] = {graph_[v].estimate.seconds, v};
    const auto middle = keyed.begin() + std::ptrdiff_t(std::min(count, keyed.size()));
    if (middle == keyed.end()) std::sort(keyed.begin(), keyed.end());
    else std::partial_sort(keyed.begin(), middle, keyed.end());
    std::vector<Vertex> best;
    for (auto it = keyed.begin(); it != middle; ++it) best.push_back(it->second);
    return best;
  }

  // The walk's best states, polished twice: with the register block the
  // model rates best for their cache tiles, and after a descent from that
  // (descend below) with the best block for the tiles it ends at. The walk
  // moves the register block one row or vector at a time and rarely crosses
  // the blocks between two good ones (8x8 to 6x16 passes through blocks with
  // too few accumulators), and the seeds' blocks were chosen before any
  // cache tiling; the walk's random steps seldom take the few in a row that
  // trade one cache tile's extent for another's. The best state is also
  // blocked as Goto's GEMM (panel_variant) and descended from there, which
  // the walk seldom reaches; an added vertex, so the walk is the same with
  // or without it. Register blocks are CPU states' only.
  void polish() {
    if (target_.kind != TargetKind::Cpu) return;
    const auto descended = [&](const State& s) { return best_register_block(descend(s, memo_), memo_); };
    bool best = true;
    for (Vertex v : polished_vertices()) {
      const State blocked = best_register_block(state_of(v), memo_);
      vertex_for(blocked, std::nullopt);
      vertex_for(descended(blocked), std::nullopt);
      if (best && anchor_.is_reduction) vertex_for(descended(panel_variant(blocked, anchor_, target_)), std::nullopt);
      best = false;
    }
  }

  static constexpr size_t kPolishedStates = 3;

  // The kPolishedStates best vertices, and the best of each vector axis
  // they leave out: which axis the lanes run along splits the graph into
  // basins that few steps cross (vectorize is a state's first step), and
  // the walk's best states often all lie in one. A dot-product dense layer
  // (lanes along the reduction) and its outer-product twin (lanes along the
  // output's columns, the weights packed) polish 1.4x apart, either way
  // round by the walk's seed. Scalar states, axes the lanes do not suit
  // (vector_affinity below 0: lanes along a GEMM's rows, which scatter its
  // output; their basins' estimates polished 4x below their time, measured)
  // and basins whose best is twice the walk's best are left. The scan stops
  // once every axis the lanes suit has its best: each vertex it passes has
  // its state rebuilt.
  std::vector<Vertex> polished_vertices() {
    std::vector<int> suited;  // the axes not yet seen
    for (int a = 0; a < anchor_.num_axes(); ++a)
      if (vector_affinity(anchor_, a) >= 0) suited.push_back(a);
    const std::vector<Vertex> all = by_estimate();
    std::vector<Vertex> picked;
    for (Vertex v : all) {
      if (graph_[v].estimate.seconds > 2 * graph_[all.front()].estimate.seconds) break;
      const auto axis = std::find(suited.begin(), suited.end(), state_of(v)->vec_axis);
      const bool new_axis = axis != suited.end();
      if (picked.size() < kPolishedStates || new_axis) picked.push_back(v);
      if (new_axis) suited.erase(axis);
      if (picked.size() >= kPolishedStates && suited.empty()) break;
    }
    return picked;
  }

  // The vertex of `s`, added (and weighed) when new; `from` is how it was
  // reached (the parent and step), none for a seed, whose state is kept.
  Vertex vertex_for(const State& s, std::optional<std::pair<Vertex, Step>> from) {
    const size_t hash = s->hash();
    for (auto [it, end] = index_.equal_range(hash); it != end; ++it)
      if (*state_of(it->second) == *s) return it->second;
    Vertex v = boost::add_vertex(graph_);
    VertexData& d = graph_[v];
    if (from) std::tie(d.parent, d.step) = *from;
    else d.state = s;
    d.estimate = estimate(anchor_, *s, target_, options_.threads);
    index_.emplace(hash, v);
    return v;
  }

  // The state of `v`, rebuilt from its parent's (always kept: it was
  // expanded) the first time it is needed.
  const State& state_of(Vertex v) {
    VertexData& d = graph_[v];
    if (!d.state) {
      StepResult r = apply_step(*state_of(d.parent), d.step, anchor_, target_);
      LOOM_INTERNAL_CHECK(r, "a step legal when weighed failed when replayed: ", r.why());
      d.state = r.state;
    }
    return d.state;
  }

  void expand(Vertex v) {
    if (graph_[v].expanded) return;
    graph_[v].expanded = true;
    const State from = state_of(v);
    std::vector<std::pair<Vertex, Step>> next;
    for (const Step& step : candidate_steps(*from, anchor_, target_)) {
      if (moves_parallel_tile_alone(step, options_.threads)) continue;
      StepResult r = apply_step(*from, step, anchor_, target_);
      if (r) next.emplace_back(vertex_for(r.state, std::make_pair(v, step)), step);  // illegal: cheap, expected
    }
    if (next.empty()) return;
    const Estimate& o = graph_[v].estimate;
    double total = 0;
    for (int k = 0; k < o.num_objectives(); ++k) total += o.objective(k);
    std::vector<double> score;
    for (auto& [n, step] : next) {
      const Estimate& p = graph_[n].estimate;
      double s = std::log(o.seconds / p.seconds);
      for (int k = 0; k < o.num_objectives(); ++k) {
        const double eps = 1e-12;
        s += (o.objective(k) / std::max(total, eps)) * std::log((o.objective(k) + eps) / (p.objective(k) + eps));
      }
      score.push_back(s / options_.temperature);
    }
    const double top = *std::max_element(score.begin(), score.end());
    double z = 0;
    for (double& s : score) z += (s = std::exp(s - top));
    for (size_t i = 0; i < next.size(); ++i) {
      auto [e, added] = boost::add_edge(v, next[i].first, graph_);
      graph_[e].step = next[i].second;
      graph_[e].probability = score[i] / z;
    }
  }

  // Half the restarts go to a seed, half to a state drawn from the
  // stationary distribution of the chain explored so far.
  Vertex restart_vertex(int step) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (unit(rng_) < 0.5) return seeds_[size_t(unit(rng_) * seeds_.size()) % seeds_.size()];
    if (pi_.size() != boost::num_vertices(graph_) && step - pi_step_ >= 250) {
      pi_ = stationary();
      pi_step_ = step;
    }
    if (pi_.empty()) return seeds_.front();
    double pick = unit(rng_), acc = 0;
    for (Vertex v = 0; v < pi_.size(); ++v)
      if ((acc += pi_[v]) >= pick) return v;
    return seeds_.front();
  }

  // Power iteration on the explored chain. Restarts and unexpanded states
  // teleport to the seeds.
  std::vector<double> stationary() const {
    const int n = int(boost::num_vertices(graph_));
    Eigen::SparseMatrix<double> transpose(n, n);  // P^T
    std::vector<Eigen::Triplet<double>> entries;
    std::vector<double> leak(n, 1.0);
    const double keep = 1.0 - options_.restart_probability;
    for (Vertex v = 0; v < Vertex(n); ++v) {
      auto [b, e] = boost::out_edges(v, graph_);
      for (auto it = b; it != e; ++it) {
        entries.emplace_back(int(boost::target(*it, graph_)), int(v), keep * graph_[*it].probability);
        leak[v] -= keep * graph_[*it].probability;
      }
    }
    transpose.setFromTriplets(entries.begin(), entries.end());
    Eigen::VectorXd pi = Eigen::VectorXd::Constant(n, 1.0 / n), teleport = Eigen::VectorXd::Zero(n);
    for (Vertex s : seeds_) teleport[int(s)] += 1.0 / double(seeds_.size());
    Eigen::Map<const Eigen::VectorXd> leaks(leak.data(), n);
    for (int iter = 0; iter < 40; ++iter) {
      Eigen::VectorXd next = transpose * pi + teleport * leaks.dot(pi);
      double diff = (next - pi).lpNorm<1>();
      pi = next / next.sum();
      if (diff < 1e-6) break;
    }
    return std::vector<double>(pi.data(), pi.data() + n);
  }

  const AnchorInfo& anchor_;
  const HwSpec& target_;
  const TraversalOptions& options_;
  EstimateMemo& memo_;
  std::mt19937_64 rng_;
  Graph graph_;
  std::unordered_multimap<size_t, Vertex> index_;  // by state hash
  std::vector<Vertex> seeds_;
  std::vector<double> pi_;
  int pi_step_ = -1000;
};

// Grows (or shrinks) the tile at (level, axis) one legal step at a time
// until it reaches `size` or passes it, or cannot move.
State tile_toward(State s, int level, int axis, int64_t size, const AnchorInfo& anchor, const HwSpec& target) {
  const bool grow = s->tile[level][axis] < size;
  while (grow ? s->tile[level][axis] < size : s->tile[level][axis] > size) {
    StepResult r = apply_step(*s, {grow ? StepKind::TileGrow : StepKind::TileShrink, level, axis}, anchor, target);
    if (!r) break;
    s = r.state;
  }
  return s;
}

// GPU starting points, built by steps from the initial state: the two
// innermost spatial axes get `threads` threads each computing `per_thread`
// consecutive outputs (one vthread), the reduction steps of `step`, every
// input staged in shared memory.
State gpu_seed(const AnchorInfo& anchor, const HwSpec& target, int64_t threads, int64_t per_thread, int64_t step) {
  State s = initial_state(anchor, target);
  for (int a = anchor.num_spatial - 1; a >= 0 && a >= anchor.num_spatial - 2; --a) {
    const int64_t block = threads * per_thread;
    s = tile_toward(s, 0, a, block, anchor, target);
    s = tile_toward(s, 1, a, s->tile[0][a], anchor, target);
    s = tile_toward(s, 2, a, std::min(per_thread, s->tile[1][a]), anchor, target);
  }
  for (int a = anchor.num_spatial; a < anchor.num_axes(); ++a) s = tile_toward(s, 1, a, step, anchor, target);
  for (int i = 0; anchor.is_reduction && i < int(anchor.accesses.size()); ++i)
    if (StepResult r = apply_step(*s, {StepKind::Pack, i, s->make_pack_point(1, 0)}, anchor, target)) s = r.state;
  return s;
}

// Moves the loop over `axis` at `level` to `position` of that level's order
// by swaps; stops where a swap is illegal.
State move_loop(State s, int level, int axis, size_t position, const AnchorInfo& anchor, const HwSpec& target) {
  const auto at = [&] {
    const auto order = s->order[level];
    return size_t(std::find(order.begin(), order.end(), axis) - order.begin());
  };
  for (size_t pos = at(); pos != position && pos < s->order[level].size(); pos = at()) {
    const int swap = int(pos > position ? pos - 1 : pos);
    StepResult r = apply_step(*s, {StepKind::Reorder, level, swap}, anchor, target);
    if (!r) break;
    s = r.state;
  }
  return s;
}

// The seed with the reduction loops of the innermost cache tile outermost
// and short (kStreamingReduceTile): the micro-kernel then sweeps the whole
// cache tile along the spatial axes for a few reduction steps at a time, so
// an input contiguous along them (B of a GEMV) is read in long runs, a few
// at once, which prefetchers follow.
State streaming_variant(State s, const AnchorInfo& anchor, const HwSpec& target) {
  constexpr int64_t kStreamingReduceTile = 4;
  const int level = s->reg_level() - 1;
  for (int a = anchor.num_spatial; a < anchor.num_axes(); ++a) {
    if (a == s->vec_axis) continue;
    s = move_loop(tile_toward(s, level, a, kStreamingReduceTile, anchor, target), level, a, 0, anchor, target);
  }
  return s;
}

// Bytes of the data tiles over the tile of `level` of the accesses that
// move along the vector axis (`moving`), or of those that do not.
double operand_bytes(const StateData& s, const AnchorInfo& anchor, int level, bool moving) {
  double bytes = 0;
  for (const Access& x : anchor.accesses)
    if (x.uses_axis[s.vec_axis] == moving) bytes += 4 * x.data_tile(s.tile[level]);
  return bytes;
}

// Shrinks the tiles at `level` of the axes `pick` accepts, the largest
// first, one step at a time, until the accesses `moving` selects (as in
// operand_bytes) take at most `budget` bytes or no such step is legal.
template <typename Pick>
State shrink_to_fit(State s, int level, Pick&& pick, bool moving, double budget, const AnchorInfo& anchor,
                    const HwSpec& target) {
  while (operand_bytes(*s, anchor, level, moving) > budget) {
    int widest = -1;
    for (int a = 0; a < anchor.num_axes(); ++a)
      if (pick(a) && s->tile[level][a] > s->tile[level + 1][a] &&
          (widest < 0 || s->tile[level][a] > s->tile[level][widest]))
        widest = a;
    if (widest < 0) break;
    StepResult r = apply_step(*s, {StepKind::TileShrink, level, widest}, anchor, target);
    if (!r) break;
    s = r.state;
  }
  return s;
}

// The spatial axis other than the vector axis with the most register rows
// (the largest extent among equals): the one a register block trades
// against vectors.
int widest_register_axis(const StateData& s, const AnchorInfo& anchor) {
  int best = -1;
  const auto key = [&](int a) { return std::make_pair(s.tile[s.reg_level()][a], anchor.plan_extent(a)); };
  for (int a = 0; a < anchor.num_spatial; ++a)
    if (a != s.vec_axis && (best < 0 || key(a) > key(best))) best = a;
  return best;
}

// The axes a register block trades along: the vector axis and the widest
// other one; where an operand is broadcast across the lanes (it does not
// move along the vector axis: a GEMM's A, a convolution's input), every
// spatial axis of more than one element, as the block's shape across them
// sets how many broadcasts a step issues for its vector loads. Measured,
// one Zen 4 core: conv 7x7 512->512 3x3 went from 3 rows by 7 vectors to
// a column of 7 pixels by 3 vectors, 1.1-1.2x faster (14x14 256->256:
// 1.14-1.25x); where every operand moves with the lanes (depthwise), the
// wider sweep took blocks the model rated within 1% of the two-axis ones,
// which ran 0.98x as fast (geomean of 17 shapes, 0.83x the worst).
std::vector<int> register_block_axes(const StateData& s, const AnchorInfo& anchor) {
  const auto broadcast = [&](const Access& x) { return !x.uses_axis[size_t(s.vec_axis)]; };
  if (s.vec_axis < 0 || std::none_of(anchor.accesses.begin(), anchor.accesses.end(), broadcast))
    return {widest_register_axis(s, anchor), s.vec_axis};
  std::vector<int> axes;
  for (int a = 0; a < anchor.num_spatial; ++a)
    if (anchor.plan_extent(a) > 1 || a == s.vec_axis) axes.push_back(a);
  return axes;
}

// One sweep: every block reachable from `s` along those axes.
State best_register_block_from(const State& s, EstimateMemo& memo, double& best_seconds) {
  const AnchorInfo& anchor = memo.anchor();
  const int reg = s->reg_level();
  const std::vector<int> axes = register_block_axes(*s, anchor);
  std::vector<State> frontier{s};
  std::set<std::vector<int64_t>> seen{s->tile.row(reg)};
  State best = s;
  while (!frontier.empty()) {
    State at = frontier.back();
    frontier.pop_back();
    for (int a : axes) {
      if (a < 0) continue;
      for (StepKind kind : {StepKind::TileGrow, StepKind::TileShrink}) {
        StepResult r = apply_step(*at, {kind, reg, a}, anchor, memo.target());
        if (!r || !seen.insert(r.state->tile.row(reg)).second) continue;
        frontier.push_back(r.state);
        const double t = memo.seconds(r.state);
        if (t < best_seconds) std::tie(best, best_seconds) = std::tie(r.state, t);
      }
    }
  }
  return best;
}

}  // namespace

State descend(const State& from, EstimateMemo& memo) {
  constexpr int kMaxMoves = 32;  // each must gain, so they end; this bounds the cost
  const AnchorInfo& anchor = memo.anchor();
  const HwSpec& target = memo.target();
  State at = from;
  double seconds = memo.seconds(at);
  for (int move = 0; move < kMaxMoves; ++move) {
    State best = at;
    double best_seconds = seconds;
    auto weigh = [&](const State& n) {
      const double t = memo.seconds(n);
      if (t < best_seconds) std::tie(best, best_seconds) = std::tie(n, t);
    };
    for (const Step& step : candidate_steps(*at, anchor, target)) {
      if (moves_parallel_tile_alone(step, memo.threads())) continue;
      StepResult r = apply_step(*at, step, anchor, target);
      if (!r) continue;
      weigh(r.state);
      // Trades: a cache tile shrinks along one axis and grows along
      // another, crossing a capacity limit neither step passes alone.
      if (step.kind != StepKind::TileShrink || step.a == 0 || step.a >= at->reg_level()) continue;
      for (int y = 0; y < anchor.num_axes(); ++y)
        if (y != step.b)
          if (StepResult g = apply_step(*r.state, {StepKind::TileGrow, step.a, y}, anchor, target)) weigh(g.state);
    }
    if (best == at) break;
    at = best;
    seconds = best_seconds;
  }
  return at;
}

State panel_variant(State s, const AnchorInfo& anchor, const HwSpec& target) {
  const int reg = s->reg_level(), inner = reg - 1, outer = reg - 2, v = s->vec_axis;
  if (outer < 1 || v < 0 || v >= anchor.num_spatial) return s;
  const auto moves = [&](const Access& x) { return x.uses_axis[v]; };
  if (std::all_of(anchor.accesses.begin(), anchor.accesses.end(), moves) ||
      std::none_of(anchor.accesses.begin(), anchor.accesses.end(), moves))
    return s;  // no operand to broadcast (a depthwise convolution's), or none to stream
  const CpuSpec& cpu = target.cpu;
  const double inner_bytes = double(private_cache_bytes(cpu, 0)), outer_bytes = double(private_cache_bytes(cpu, 1));
  const auto reduce = [&](int a) { return anchor.is_reduce_axis(a); };
  const auto other_spatial = [&](int a) { return !reduce(a) && a != v; };
  for (int a = 0; a < anchor.num_spatial; ++a) s = tile_toward(s, inner, a, s->tile[reg][a], anchor, target);
  s = shrink_to_fit(s, inner, reduce, false, inner_bytes / 2, anchor, target);
  for (int a = anchor.num_spatial; a < anchor.num_axes(); ++a)
    s = tile_toward(s, outer, a, s->tile[inner][a], anchor, target);
  s = shrink_to_fit(s, outer, [&](int a) { return a == v; }, true, outer_bytes / 2, anchor, target);
  s = shrink_to_fit(s, outer, other_spatial, false, outer_bytes / 4, anchor, target);
  // Orders: the inner level sweeps the other spatial axes, then the vector
  // axis, then the reduction; the outer level the vector axis, the
  // reduction, then the other spatial axes.
  size_t position = 0;
  for (int a = 0; a < anchor.num_axes(); ++a)
    if (other_spatial(a)) s = move_loop(s, inner, a, position++, anchor, target);
  s = move_loop(s, inner, v, position, anchor, target);
  s = move_loop(s, outer, v, 0, anchor, target);
  position = 1;
  for (int a = anchor.num_spatial; a < anchor.num_axes(); ++a) s = move_loop(s, outer, a, position++, anchor, target);
  const int point = s->make_pack_point(outer, int(position));
  for (size_t i = 0; i < anchor.accesses.size(); ++i) {
    if (!anchor.accesses[i].uses_axis[v]) continue;
    if (StepResult r = apply_step(*s, {StepKind::Pack, int(i), point}, anchor, target)) s = r.state;
  }
  return s;
}

double EstimateMemo::seconds(const State& s) {
  if (const auto it = seconds_.find(s); it != seconds_.end()) return it->second;
  const double t = estimate(anchor_, *s, target_, threads_).seconds;
  seconds_.emplace(s, t);
  return t;
}

State best_register_block(const State& s, EstimateMemo& memo) {
  // The cache tiles follow the register tile, so the blocks reachable from
  // the best one differ from those reachable from `s`: sweep again from it
  // until nothing improves (a few sweeps; each must gain, so they end).
  constexpr int kMaxSweeps = 8;
  double seconds = memo.seconds(s);
  State best = s;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    State next = best_register_block_from(best, memo, seconds);
    if (next == best) break;
    best = next;
  }
  return best;
}

std::vector<State> seed_states(const AnchorInfo& anchor, const HwSpec& target) {
  State init = initial_state(anchor, target);
  std::vector<State> seeds{init};
  if (target.kind == TargetKind::Gpu) {
    const bool two_axes = anchor.num_spatial >= 2;
    for (int64_t per_thread : {1, 2, 4})
      for (int64_t step : {8, 16}) seeds.push_back(gpu_seed(anchor, target, two_axes ? 16 : 256, per_thread, step));
    return seeds;
  }
  const int lanes = target.cpu.fp32_lanes();
  EstimateMemo memo(anchor, target, 1);
  std::vector<int> axes;
  for (int a = 0; a < anchor.num_axes(); ++a)
    if (offers_vector_along(anchor, a)) axes.push_back(a);
  std::stable_sort(axes.begin(), axes.end(), [&](int a, int b) { return vector_affinity(anchor, a) > vector_affinity(anchor, b); });
  // The output-contiguous axis is always tried, with the inputs that are
  // strided along it packed (their packed layout is contiguous there).
  const int out_axis = anchor.num_spatial - 1;
  if (std::find(axes.begin(), axes.begin() + std::min<size_t>(2, axes.size()), out_axis) ==
      axes.begin() + std::min<size_t>(2, axes.size()))
    axes.insert(axes.begin() + std::min<size_t>(2, axes.size()), out_axis);
  for (size_t k = 0; k < axes.size() && k < 3; ++k) {
    const int v = axes[k];
    StepResult r = apply_step(*init, {StepKind::Vectorize, v, lanes}, anchor, target);
    if (!r) continue;
    State s = r.state;
    s = best_register_block(s, memo);
    for (size_t i = 0; i < anchor.accesses.size(); ++i) {
      const Access& x = anchor.accesses[i];
      if (!x.uses_axis[v] || x.stride[v] == 1) continue;
      const int point = s->make_pack_point(s->reg_level() - 1, int(s->order[s->reg_level() - 1].size()));
      if (StepResult p = apply_step(*s, {StepKind::Pack, int(i), point}, anchor, target)) s = p.state;
    }
    seeds.push_back(s);
    if (anchor.is_reduction) seeds.push_back(streaming_variant(s, anchor, target));
  }
  return seeds;
}

TraversalResult traverse_state_graph(const AnchorInfo& anchor, const HwSpec& target, const std::vector<State>& seeds,
                                     const TraversalOptions& options) {
  EstimateMemo memo(anchor, target, options.threads);
  return traverse_state_graph(seeds, options, memo);
}

TraversalResult traverse_state_graph(const std::vector<State>& seeds, const TraversalOptions& options,
                                     EstimateMemo& memo) {
  return Traversal(options, memo).run(seeds);
}

}  // namespace loom
