#include "schedule/state.h"

#include <algorithm>
#include <sstream>

#include "loom/error.h"
#include "schedule/anchor.h"

namespace loom {

namespace {
void hash_combine(size_t& seed, size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

int private_cache_levels(const CpuSpec& cpu) {
  int n = 0;
  for (const CacheLevel& c : cpu.caches) n += c.shared_by_cores <= 1;
  return std::max(1, std::min(n, 2));
}
}  // namespace

std::vector<Step> StateData::history() const {
  std::vector<Step> steps;
  for (const StepTrail* t = trail.get(); t; t = t->previous.get()) steps.push_back(t->step);
  return {steps.rbegin(), steps.rend()};
}

bool StateData::operator==(const StateData& o) const {
  return target == o.target && tile == o.tile && order == o.order && vec_axis == o.vec_axis &&
         vec_width == o.vec_width && unroll == o.unroll && pack == o.pack && fuse == o.fuse &&
         materialize == o.materialize;
}

bool StateData::reads_through_guard(const AnchorInfo& anchor, size_t access) const {
  return anchor.accesses[access].guarded && !materialized(access);
}

bool StateData::peels_remainder_at(const AnchorInfo& anchor, int level, int axis) const {
  if (anchor.is_reduce_axis(axis)) return level < reg_level();
  return level > 0 || (axis == vec_axis && vec_width > 1);
}

bool StateData::pack_opens_loop(int point, int axis) const {
  const auto row = order[pack_level(point)];
  const int* end = row.begin() + pack_position(point);
  return std::find(row.begin(), end, axis) != end;
}

bool StateData::packs_halo(const AnchorInfo& anchor, size_t access) const {
  const Access& x = anchor.accesses[access];
  if (target != TargetKind::Cpu || !x.affine || !x.reads_window(anchor.num_spatial) || vec_axis < 0 ||
      !x.uses_axis[size_t(vec_axis)])
    return false;
  const size_t last = x.dim_terms.size() - 1;  // the vector's axis moves it alone, by one, and no other
  for (size_t d = 0; d <= last; ++d)
    for (const Access::Term& t : x.dim_terms[d])
      if (d == last ? t.axis != vec_axis || t.coeff != 1 : t.axis == vec_axis) return false;
  return true;
}

bool StateData::loop_runs_once(const AnchorInfo& anchor, int level, int axis) const {
  if (level == 0 || (level == 1 && anchor.is_reduce_axis(axis)))
    return anchor.const_extent[size_t(axis)] > 0 && tile[level][axis] >= anchor.const_extent[size_t(axis)];
  return tile[level][axis] >= tile[level - 1][axis];
}

size_t StateData::hash() const {
  size_t h = size_t(target);
  for (int64_t t : tile.flat()) hash_combine(h, std::hash<int64_t>()(t));
  for (int a : order.flat()) hash_combine(h, size_t(a) + 17);
  hash_combine(h, size_t(vec_axis + 1) * 31 + size_t(vec_width));
  hash_combine(h, size_t(unroll));
  for (int p : pack) hash_combine(h, size_t(p + 2));
  hash_combine(h, fuse);
  hash_combine(h, materialize);
  return h;
}

std::string StateData::str() const {
  std::ostringstream os;
  for (int l = 0; l < levels(); ++l) {
    os << (l ? " | " : "") << "L" << l << "[";
    for (int i = 0; i < int(order[l].size()); ++i) {
      int a = order[l][i];
      os << (i ? " " : "") << "a" << a << "=" << tile[l][a];
    }
    os << "]";
  }
  if (vec_axis >= 0) os << " vec a" << vec_axis << "x" << vec_width;
  if (unroll > 1) os << " unroll " << unroll;
  for (size_t i = 0; i < pack.size(); ++i)
    if (pack[i] >= 0) os << " pack#" << i << "@L" << pack_level(pack[i]) << "." << pack_position(pack[i]);
  for (size_t i = 0; i < pack.size(); ++i)
    if (materialized(i)) os << " materialize#" << i;
  if (fuse) os << " fused";
  return os.str();
}

std::vector<std::string> level_names(const HwSpec& target) {
  if (target.kind == TargetKind::Gpu) return {"block", "vthread", "thread"};
  std::vector<std::string> names{"parallel"};
  std::vector<std::string> caches;
  for (const CacheLevel& c : target.cpu.caches)
    if (c.shared_by_cores <= 1) caches.push_back(c.name);
  if (caches.size() > 2) caches.erase(caches.begin(), caches.end() - 2);
  if (caches.empty()) caches.push_back("cache");
  for (auto it = caches.rbegin(); it != caches.rend(); ++it) names.push_back(*it);
  names.push_back("reg");
  return names;
}

State initial_state(const AnchorInfo& anchor, const HwSpec& target) {
  auto s = std::make_shared<StateData>();
  s->target = target.kind;
  s->num_axes = anchor.num_axes();
  s->num_spatial = anchor.num_spatial;
  const int levels = target.kind == TargetKind::Gpu ? 3 : 2 + private_cache_levels(target.cpu);
  std::vector<int64_t> full;
  for (int a = 0; a < s->num_axes; ++a) full.push_back(anchor.plan_extent(a));
  std::vector<int> all_axes, spatial;
  for (int a = 0; a < s->num_axes; ++a) {
    all_axes.push_back(a);
    if (a < s->num_spatial) spatial.push_back(a);
  }
  s->tile = TileTable(levels, s->num_axes);
  s->order = OrderTable(s->num_axes);
  // A GPU state starts from one thread per block computing one output, the
  // reduction in steps of one; a CPU state from the whole extent per tile.
  const bool gpu = target.kind == TargetKind::Gpu;
  for (int l = 0; l < levels; ++l) {
    for (int a = 0; a < s->num_axes; ++a) {
      const bool whole = gpu ? l == 0 && anchor.is_reduce_axis(a) : l < levels - 1;
      s->tile[l][a] = whole ? full[a] : 1;
    }
    s->order.add_level(l == 0 || l == levels - 1 ? spatial : all_axes);
  }
  s->pack.assign(anchor.accesses.size(), -1);
  return s;
}

State replay(const AnchorInfo& anchor, const HwSpec& target, const std::vector<Step>& steps) {
  State s = initial_state(anchor, target);
  for (const Step& step : steps) {
    StepResult r = apply_step(*s, step, anchor, target);
    LOOM_USER_CHECK(r, "cannot replay step '", step.str(), "': ", r.why());
    s = r.state;
  }
  return s;
}

std::string serialize_steps(const std::vector<Step>& steps) {
  std::ostringstream os;
  for (const Step& s : steps) os << s.str() << "\n";
  return os.str();
}

std::vector<Step> parse_steps(const std::string& text) {
  std::vector<Step> steps;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string name;
    Step step{StepKind::TileGrow};
    std::string rest;
    ls >> name >> step.a >> step.b;
    bool parsed = !ls.fail();
    ls >> rest;
    LOOM_USER_CHECK(parsed && rest.empty(), "schedule record line ", line_no, ": '", line,
                    "' is not '<step> <int> <int>'");
    bool known = false;
    for (int k = 0; k <= int(StepKind::Materialize); ++k)
      if (name == step_name(StepKind(k))) {
        step.kind = StepKind(k);
        known = true;
      }
    LOOM_USER_CHECK(known, "schedule record line ", line_no, ": unknown step '", name, "'");
    steps.push_back(step);
  }
  return steps;
}

int64_t call_trips(const StateData& s, const AnchorInfo& an, int r) {
  const int reg = s.reg_level();
  const int64_t extent = an.plan_extent(r);
  return std::min(reg > 1 ? s.tile[reg - 1][r] : extent, extent);
}

UnrolledReduction unrolled_reduction(const StateData& s, const AnchorInfo& an) {
  const auto order = s.order[s.reg_level() - 1];
  for (const int* it = order.end(); it != order.begin();) {
    const int r = *--it;
    const int64_t R = call_trips(s, an, r);
    if (!an.is_reduce_axis(r) || R <= 1) continue;
    if (R <= StateData::kWholeUnrollTrips) return {r, R, an.plan_extent(r) % R == 0};
    return {r, std::min<int64_t>(R, s.unroll), false};
  }
  return {};
}

int64_t accumulator_copies(const StateData& s, const AnchorInfo& an, int64_t accumulator_vectors, int fma_chains,
                           int vector_registers) {
  const UnrolledReduction unrolled = unrolled_reduction(s, an);
  if (!an.is_reduction || unrolled.axis < 0 || (s.vec_axis >= 0 && an.is_reduce_axis(s.vec_axis)) ||
      accumulator_vectors <= 0 || call_trips(s, an, unrolled.axis) <= StateData::kWholeUnrollTrips ||
      !an.padding.empty())
    return 1;
  for (const Access& x : an.accesses)
    if (x.guarded) return 1;
  // Operands beside the accumulators: a vector per accumulator at most, a broadcast, one in flight.
  const int64_t operands = accumulator_vectors + 2;
  int64_t copies = (fma_chains + accumulator_vectors - 1) / accumulator_vectors;
  while (copies > 1 && copies * accumulator_vectors + operands > vector_registers) --copies;
  return std::max<int64_t>(copies, 1);
}

std::optional<BorderTiles> border_tiles(const StateData& s, const AnchorInfo& an, int axis, int64_t base,
                                        int64_t size) {
  const PaddedAxis* padded = nullptr;
  for (const PaddedAxis& p : an.padded_axes)
    if (p.axis == axis && !p.taps.empty()) padded = &p;
  const int64_t T = s.tile[s.reg_level()][axis];
  const UnrolledReduction unrolled = unrolled_reduction(s, an);
  if (!padded || !unrolled.whole || unrolled.axis != padded->tap || T <= 0 || size <= T || base < 0)
    return std::nullopt;
  const std::pair<int64_t, int64_t> all_taps{0, an.const_extent[size_t(padded->tap)] - 1};
  const int64_t n = (size + T - 1) / T;
  auto reaches_padding = [&](int64_t k) {
    for (int64_t x = base + k * T; x < base + std::min(size, (k + 1) * T); ++x)
      if (x >= int64_t(padded->taps.size()) || padded->taps[size_t(x)] != all_taps) return true;
    return false;
  };
  BorderTiles b;
  while (b.lead < n && reaches_padding(b.lead)) ++b.lead;
  while (b.lead + b.trail < n && reaches_padding(n - 1 - b.trail)) ++b.trail;
  if (b.lead == 0 && b.trail == 0) return std::nullopt;
  if (b.trail == 0 && size % T != 0 && b.lead < n) b.trail = 1;
  if (b.lead + b.trail > kMaxBorderTiles) return std::nullopt;
  return b;
}

}  // namespace loom
