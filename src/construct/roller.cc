#include "construct/roller.h"

#include <algorithm>
#include <cmath>

#include "construct/analytic_model.h"
#include "schedule/anchor.h"
#include "schedule/path.h"

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
  for (const auto& choice : branches) {
    StateData s = *base;
    s.trail.reset();
    for (int l = 1; l < levels; ++l)
      for (int a = 0; a < s.num_axes; ++a) s.tile[l][a] = a == s.vec_axis ? s.vec_width : 1;
    for (int l = 1; l < levels; ++l) roller.grow_level(s, l, choice[l - 1]);
    roller.scale_out(s);
    for (size_t i = 0; i < s.pack.size(); ++i)
      if (!anchor.accesses[i].uses_axis.empty()) s.pack[i] = s.make_pack_point(1, int(s.order[1].size()));
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
