#include "construct/analytic_model.h"


#include <algorithm>
#include <cmath>
#include <sstream>

namespace loom {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Footprint in elements of an access's data tile for tile sizes `t`.
double data_tile(const Access& x, const int64_t* t) {
  double elems = 1;
  for (const auto& row : x.dim_coeff) {
    double extent = 1;
    for (size_t a = 0; a < row.size(); ++a) extent += double(row[a]) * double(t[a] - 1);
    elems *= extent;
  }
  return elems;
}

// Bytes per second filling the private cache at tile level `level`.
double fill_bandwidth(const StateData& s, const HwSpec& hw, int level) {
  const CpuSpec& c = hw.cpu;
  const double f = c.frequency_ghz * 1e9;
  const int from_inner = s.reg_level() - 1 - level;  // 0: L1
  const double per_cycle = from_inner == 0 ? 64.0 : from_inner == 1 ? 32.0 : 16.0;
  double bw = per_cycle * f;
  if (from_inner + 1 < int(c.caches.size()) && c.caches[from_inner + 1].bandwidth_gbs > 0)
    bw = c.caches[from_inner + 1].bandwidth_gbs * 1e9;
  return bw;
}

double cache_bytes(const StateData& s, const HwSpec& hw, int level) {
  return double(private_cache_bytes(hw.cpu, s.reg_level() - 1 - level));
}

// Trip count of level-l loops over axis a inside the parent tile.
double trips(const StateData& s, const AnchorInfo& an, int l, int a) {
  double parent = l == 0 ? double(an.plan_extent(a)) : double(s.tile[l - 1][a]);
  if (l > 0 && an.is_reduce_axis(a) && l - 1 == 0) parent = double(an.plan_extent(a));
  return ceil_div(parent, double(s.tile[l][a]));
}

}  // namespace

std::string Estimate::str() const {
  std::ostringstream os;
  os << "t=" << seconds * 1e3 << "ms compute=" << compute_s * 1e3 << "ms traffic=[";
  for (size_t i = 0; i < level_s.size(); ++i) os << (i ? " " : "") << level_s[i] * 1e3;
  os << "]ms pack=" << pack_s * 1e3 << "ms penalty=" << penalty_s * 1e3 << "ms balance=" << balance
     << " vec=" << vector_util << " ilp=" << ilp;
  return os.str();
}

Estimate estimate(const AnchorInfo& an, const StateData& s, const HwSpec& hw, int threads) {
  Estimate est;
  const CpuSpec& cpu = hw.cpu;
  const int n = s.num_axes, reg = s.reg_level();
  const double freq = cpu.frequency_ghz * 1e9;
  std::vector<int64_t> full(n);
  double points = 1;
  for (int a = 0; a < n; ++a) {
    full[a] = an.plan_extent(a);
    points *= double(full[a]);
  }
  const double flops = (an.is_reduction ? 2.0 : 1.0) * points;

  // --- compute ---
  const int W = s.vec_axis >= 0 ? s.vec_width : 1;
  const int lanes = cpu.fp32_lanes();
  if (s.vec_axis >= 0) {
    double e = double(full[s.vec_axis]);
    est.vector_util = double(W) / lanes * e / (ceil_div(e, W) * W);
  } else {
    est.vector_util = 1.0 / lanes;
  }
  double reg_elems = 1;
  for (int a = 0; a < n; ++a) reg_elems *= double(s.tile[reg][a]);
  const double acc = std::max(1.0, reg_elems / W);
  est.ilp = an.is_reduction ? std::min(1.0, acc / double(cpu.fma_latency * cpu.fma_units)) : 1.0;
  double loads = 0;
  bool gather = false;
  std::vector<int64_t> t = s.tile.row(reg);  // the register block of one reduction step
  for (int a = an.num_spatial; a < n; ++a)
    if (a != s.vec_axis) t[a] = 1;
  for (size_t i = 0; i < an.accesses.size(); ++i) {
    const Access& x = an.accesses[i];
    double elems = data_tile(x, t.data());
    bool contiguous = s.vec_axis >= 0 && x.uses_axis[s.vec_axis] &&
                      (s.pack[i] >= 0 || (x.stride[s.vec_axis] && *x.stride[s.vec_axis] == 1));
    if (s.vec_axis >= 0 && x.uses_axis[s.vec_axis] && !contiguous) gather = true;
    loads += contiguous ? elems / W : elems;
  }
  if (gather) est.vector_util /= 2.0 * W / lanes + 1;
  const double fma_cycles = acc / cpu.fma_units;
  const double issue = fma_cycles / std::max(fma_cycles, loads / 2.0);
  const double peak = cpu.peak_gflops_per_core * 1e9;
  est.compute_s = flops / (peak * est.vector_util * est.ilp * issue);

  // --- traffic per cache level ---
  double outer_trips = 1;  // number of level-0 tiles
  for (int a = 0; a < an.num_spatial; ++a) outer_trips *= trips(s, an, 0, a);
  for (int l = 1; l < reg; ++l) {
    double tiles = 1;
    for (int a = 0; a < n; ++a) tiles *= ceil_div(double(full[a]), double(s.tile[l][a]));
    double footprint = 0, bytes = 0;
    auto add = [&](const std::vector<bool>& uses, double tile_elems, double times, double line_util) {
      double reuse = 1;
      for (auto it = s.order[l].rbegin(); it != s.order[l].rend(); ++it) {
        if (uses[*it]) break;
        reuse *= trips(s, an, l, *it);
      }
      footprint += tile_elems * 4;
      bytes += 4 * tile_elems * times * tiles / reuse / line_util;
    };
    for (size_t i = 0; i < an.accesses.size(); ++i) {
      const Access& x = an.accesses[i];
      double run = 1;
      for (int a = 0; a < n; ++a)
        if (x.stride[a] && *x.stride[a] == 1) run = double(s.tile[l][a]);
      double util = s.pack[i] >= 0 ? 1.0 : std::min(1.0, run * 4 / 64.0);
      add(x.uses_axis, data_tile(x, s.tile[l]), 1, util);
    }
    std::vector<bool> out_uses(n, false);
    for (int a = 0; a < an.num_spatial; ++a) out_uses[a] = true;
    double out_elems = 1;
    for (int a = 0; a < an.num_spatial; ++a) out_elems *= double(s.tile[l][a]);
    add(out_uses, out_elems, 2, 1);
    double t = bytes / fill_bandwidth(s, hw, l);
    if (footprint > cache_bytes(s, hw, l)) t *= 1.0 + footprint / cache_bytes(s, hw, l);
    est.level_s.push_back(t);
  }

  // --- packing ---
  for (size_t i = 0; i < s.pack.size(); ++i) {
    if (s.pack[i] < 0) continue;
    int level = s.pack_level(s.pack[i]), pos = s.pack_position(s.pack[i]);
    double region = 1, count = outer_trips;
    for (int a = 0; a < n; ++a) {
      bool opened = false;
      for (int p = 0; p < pos; ++p) opened |= s.order[level][p] == a;
      for (int l = 1; l < level; ++l) count *= trips(s, an, l, a);
      if (opened) count *= trips(s, an, level, a);
      if (an.accesses[i].uses_axis[a]) region *= double(opened ? s.tile[level][a] : (level == 1 && an.is_reduce_axis(a) ? full[a] : s.tile[level - 1][a]));
    }
    est.pack_s += 2 * 4 * region * count / fill_bandwidth(s, hw, level) + region * count / (4 * freq);
  }

  // --- penalties ---
  double slow = 1;
  for (int a = 0; a < an.num_spatial; ++a) {
    double e = double(full[a]);
    slow *= 1 - std::fmod(e, double(s.tile[reg][a])) / e;
  }
  const double slow_frac = 1 - slow;
  est.penalty_s += slow_frac * est.compute_s * 3;
  for (size_t i = 0; i < an.accesses.size(); ++i)
    if (an.accesses[i].guarded && s.pack[i] < 0) est.penalty_s += points / W * 1.0 / freq;
  double spatial_reg = 1;
  for (int a = 0; a < an.num_spatial; ++a) spatial_reg *= double(s.tile[reg][a]);
  double reduce_blocks = 1;
  for (int a = an.num_spatial; a < n; ++a) reduce_blocks *= ceil_div(double(full[a]), double(s.tile[reg - 1][a]));
  double spatial_points = 1;
  for (int a = 0; a < an.num_spatial; ++a) spatial_points *= double(full[a]);
  est.penalty_s += spatial_points / spatial_reg * reduce_blocks * 30.0 / freq;
  // A vectorized reduction axis ends every block with a horizontal sum of
  // its lanes per output element (log2(W) shuffle+add pairs).
  if (s.vec_axis >= an.num_spatial)
    est.penalty_s += spatial_points * reduce_blocks * 2.0 * std::log2(double(s.vec_width) + 1) / freq;

  // --- parallelism ---
  const int used = std::max(1, std::min<int>(threads, int(outer_trips)));
  est.balance = outer_trips / (ceil_div(outer_trips, threads) * threads);
  double core = est.compute_s;
  for (double t : est.level_s) core = std::max(core, t);
  est.seconds = (core + est.pack_s + est.penalty_s) / (threads * est.balance);
  (void)used;
  return est;
}

}  // namespace loom
