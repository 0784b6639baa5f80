#include "construct/roller.h"

#include <algorithm>
#include <cmath>

#include "construct/analytic_model.h"
#include "schedule/anchor.h"
#include "schedule/path.h"
#include "schedule/step.h"

namespace loom {

namespace {


struct Roller {
  const AnchorInfo& an;
  const HwSpec& hw;
  int threads;

  // Footprint (bytes) and whole-operator traffic (bytes) for tile `t`.
  double footprint(const std::vector<int64_t>& t) const {
    double f = 0, out = 1;
    for (const Access& x : an.accesses) f += x.data_tile(t.data());
    for (int a = 0; a < an.num_spatial; ++a) out *= double(t[a]);
    return 4 * (f + out);
  }
  double traffic(const std::vector<int64_t>& t) const {
    double tiles = 1;
    for (int a = 0; a < an.num_axes(); ++a) tiles *= std::ceil(double(an.plan_extent(a)) / double(t[a]));
    return footprint(t) * tiles;
  }
  double capacity(const StateData& s, int level) const {
    return double(private_cache_bytes(hw.cpu, s.reg_level() - 1 - level));
  }

  // The next aligned size of tile[l][a]: a larger multiple of the minimal
  // inner tile that divides the outer tile; 0 when none.
  int64_t next_size(const StateData& s, int l, int a) const {
    const int64_t step = a == s.vec_axis ? s.vec_width : 1;
    const int64_t outer = s.tile[l - 1][a];
    for (int64_t v = s.tile[l][a] + step; v <= outer; v += step)
      if (outer % v == 0) return v;
    return 0;
  }

  // Grows level l greedily by reuse score; `branch` picks the branch-th
  // best axis at the first decision.
  void grow_level(StateData& s, int l, int branch) const {
    for (int decision = 0;; ++decision) {
      std::vector<std::pair<double, int>> options;
      const std::vector<int64_t> cur = s.tile.row(l);
      for (int a = 0; a < s.num_axes; ++a) {
        if (an.is_reduce_axis(a) && l == s.reg_level()) continue;
        int64_t v = next_size(s, l, a);
        if (!v) continue;
        StateData t = s;
        t.tile[l][a] = v;
        bool fits = l == s.reg_level() ? check_legal(t, an, hw).empty() : footprint(t.tile.row(l)) <= capacity(s, l);
        if (!fits) continue;
        double df = footprint(t.tile.row(l)) - footprint(cur);
        double score = (traffic(cur) - traffic(t.tile.row(l))) / std::max(df, 1e-9);
        options.emplace_back(score, a);
      }
      if (options.empty()) return;
      std::stable_sort(options.begin(), options.end(), [](auto& x, auto& y) { return x.first > y.first; });
      int pick = decision == 0 ? std::min<int>(branch, int(options.size()) - 1) : 0;
      s.tile[l][options[pick].second] = next_size(s, l, options[pick].second);
    }
  }

  // Roller's scale-out: the largest outer tile that still gives every
  // thread a tile.
  void scale_out(StateData& s) const {
    for (int a = 0; a < an.num_spatial; ++a) s.tile[0][a] = s.tile[1][a];
    auto count = [&] {
      double n = 1;
      for (int a = 0; a < an.num_spatial; ++a) n *= std::ceil(double(an.plan_extent(a)) / double(s.tile[0][a]));
      return n;
    };
    for (bool grew = true; grew;) {
      grew = false;
      for (int a = 0; a < an.num_spatial; ++a) {
        int64_t old = s.tile[0][a];
        int64_t limit = (an.plan_extent(a) + s.tile[1][a] - 1) / s.tile[1][a] * s.tile[1][a];
        if (old * 2 > limit && old != limit) s.tile[0][a] = limit;
        else if (old * 2 <= limit) s.tile[0][a] = old * 2;
        else continue;
        if (count() < threads) s.tile[0][a] = old;
        else grew = true;
      }
    }
  }
};

// Roller on a GPU (its home): the thread tile (registers) first, then the
// block tile (shared memory) in multiples of it, one vthread per thread.
// Each grows by doubling along the axis with the best reuse score while
// the level's capacity holds: half the spec's registers per thread, the
// block's shared memory and thread limit. Every input is staged.
struct GpuRoller {
  const Roller& r;
  const AnchorInfo& an;
  const HwSpec& hw;

  // The level's tile over every axis: thread tiles (reduction 1), or block tiles with the reduction step.
  std::vector<int64_t> level_tile(const StateData& s, bool block) const {
    std::vector<int64_t> t(size_t(s.num_axes), 1);
    for (int a = 0; a < s.num_axes; ++a)
      t[size_t(a)] = an.is_reduce_axis(a) ? (block ? s.tile[1][a] : 1) : s.tile[block ? 0 : 2][a];
    return t;
  }

  // tile[...][a] grown one size: doubled along a spatial axis (the block
  // capped at the extent rounded up to the thread tile), the next divisor
  // of the extent along a reduction axis. False when it cannot grow.
  bool grow(StateData& s, int a, bool block) const {
    const int64_t extent = an.plan_extent(a);
    if (an.is_reduce_axis(a)) {
      if (!block) return false;
      for (int64_t v = s.tile[1][a] + 1; v <= extent; ++v)
        if (extent % v == 0) {
          s.tile[1][a] = v;
          return true;
        }
      return false;
    }
    if (!block) {
      if (s.tile[2][a] * 2 > extent) return false;
      for (int l = 0; l < 3; ++l) s.tile[l][a] = s.tile[2][a] * 2;
      return true;
    }
    const int64_t t = s.tile[2][a], limit = (extent + t - 1) / t * t;
    if (s.tile[0][a] >= limit) return false;
    s.tile[0][a] = s.tile[1][a] = std::min(limit, s.tile[0][a] * 2);
    return true;
  }

  bool fits(const StateData& s, bool block) const {
    if (!check_legal(s, an, hw).empty()) return false;
    return block || gpu_register_estimate(s, an) <= hw.gpu.max_registers_per_thread / 2;
  }

  void grow_level(StateData& s, bool block, int branch) const {
    for (int decision = 0;; ++decision) {
      std::vector<std::pair<double, StateData>> options;
      const std::vector<int64_t> cur = level_tile(s, block);
      for (int a = 0; a < s.num_axes; ++a) {
        StateData t = s;
        if (!grow(t, a, block) || !fits(t, block)) continue;
        const std::vector<int64_t> next = level_tile(t, block);
        const double df = r.footprint(next) - r.footprint(cur);
        options.emplace_back((r.traffic(cur) - r.traffic(next)) / std::max(df, 1e-9), t);
      }
      if (options.empty()) return;
      std::stable_sort(options.begin(), options.end(), [](auto& x, auto& y) { return x.first > y.first; });
      s = options[size_t(decision == 0 ? std::min<int>(branch, int(options.size()) - 1) : 0)].second;
    }
  }

  std::vector<StateData> leaves() const {
    std::vector<StateData> out;
    for (int thread_branch = 0; thread_branch < 2; ++thread_branch)
      for (int block_branch = 0; block_branch < 3; ++block_branch) {
        StateData s = *initial_state(an, hw);
        s.trail.reset();
        for (size_t i = 0; i < s.pack.size(); ++i) s.pack[i] = an.is_reduction ? s.make_pack_point(1, 0) : -1;
        grow_level(s, false, thread_branch);
        grow_level(s, true, block_branch);
        out.push_back(s);
      }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tuner> make_roller_tuner(const Task& task) {
  return std::make_unique<ProposeOnceTuner>([&task](int n) {
    std::vector<Candidate> out;
    for (const State& s : roller_states(*task.anchor, task.target, task.threads, std::max(1, n)))
      out.push_back(make_candidate(task, s, estimate(*task.anchor, *s, task.target, task.threads).seconds));
    return out;
  });
}

std::vector<State> roller_states(const AnchorInfo& anchor, const HwSpec& target, int threads, int k) {
  // Roller's alignment rule: the output's innermost dimension is aligned to
  // the transaction (here: vector) length.
  State base = initial_state(anchor, target);
  if (target.kind == TargetKind::Cpu)
    if (StepResult v = apply_step(*base, {StepKind::Vectorize, anchor.num_spatial - 1, target.cpu.fp32_lanes()}, anchor, target))
      base = v.state;
  Roller roller{anchor, target, threads};
  std::vector<StateData> gpu_leaves;
  if (target.kind == TargetKind::Gpu) gpu_leaves = GpuRoller{roller, anchor, target}.leaves();

  struct Leaf {
    State state;
    double predicted_s;
    double traffic_s;  // Roller's single objective
  };
  std::vector<Leaf> leaves;
  const int levels = base->levels();
  // Branching: the 3 best first choices at the outer cache, 2 below.
  std::vector<std::vector<int>> branches{{}};
  for (int l = 1; l < levels; ++l) {
    std::vector<std::vector<int>> more;
    for (const auto& b : branches)
      for (int k = 0; k < (l == 1 ? 3 : 2); ++k) {
        auto c = b;
        c.push_back(k);
        more.push_back(c);
      }
    branches = more;
  }
  const size_t count = target.kind == TargetKind::Gpu ? gpu_leaves.size() : branches.size();
  for (size_t leaf = 0; leaf < count; ++leaf) {
    StateData s = target.kind == TargetKind::Gpu ? gpu_leaves[leaf] : *base;
    if (target.kind == TargetKind::Cpu) {
      const std::vector<int>& choice = branches[leaf];
      s.trail.reset();
      for (int l = 1; l < levels; ++l)
        for (int a = 0; a < s.num_axes; ++a) s.tile[l][a] = a == s.vec_axis ? s.vec_width : 1;
      for (int l = 1; l < levels; ++l) roller.grow_level(s, l, choice[l - 1]);
      roller.scale_out(s);
      for (size_t i = 0; i < s.pack.size(); ++i)
        if (!anchor.accesses[i].uses_axis.empty()) s.pack[i] = s.make_pack_point(1, int(s.order[1].size()));
    }
    if (!check_legal(s, anchor, target).empty()) {
      for (int& p : s.pack) p = -1;
      if (!check_legal(s, anchor, target).empty()) continue;
    }
    State st = state_with_path(anchor, target, s);
    if (!st) continue;
    bool dup = false;
    for (const auto& l : leaves) dup |= *l.state == *st;
    if (dup) continue;
    Estimate e = estimate(anchor, *st, target, threads);
    double traffic = 0;
    for (int c = 0; c < e.caches; ++c) traffic = std::max(traffic, e.level_s[c]);
    leaves.push_back({st, e.seconds, traffic});
  }
  std::stable_sort(leaves.begin(), leaves.end(), [](auto& x, auto& y) { return x.traffic_s < y.traffic_s; });
  std::vector<State> out;
  for (const auto& l : leaves) {
    if (int(out.size()) == k) break;
    out.push_back(l.state);
  }
  if (out.empty()) out.push_back(base);
  return out;
}

}  // namespace loom
