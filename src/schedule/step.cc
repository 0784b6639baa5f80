// The primitives' one definition each: name, application and legality.
#include "schedule/step.h"

#include <boost/container/small_vector.hpp>
#include <sstream>

#include "loom/hwspec.h"
#include "schedule/anchor.h"
#include "schedule/gpu_tiles.h"
#include "schedule/state.h"

namespace loom {

namespace {

using Mutate = Reason (*)(StateData&, const Step&, const AnchorInfo&, const HwSpec&);

// The smallest tile a level may take on an axis: its child's tile.
int64_t child_tile(const StateData& s, int level, int axis) {
  if (level == s.reg_level()) return axis == s.vec_axis ? s.vec_width : 1;
  return s.tile[level + 1][axis];
}

int64_t parent_tile(const StateData& s, const AnchorInfo& anchor, int level, int axis) {
  return level == 0 ? anchor.plan_extent(axis) : s.tile[level - 1][axis];
}

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// On the walk's hot path: on the stack for any realistic extent.
using Divisors = boost::container::small_vector<int64_t, 64>;

// The divisors of n, ascending.
Divisors divisors(int64_t n) {
  Divisors low, high;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d * d != n) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Whether ascending divisors leave a gap of more than kPartialLadderStep
// between neighbours: too coarse a ladder of tiles for a cache level.
constexpr int64_t kPartialLadderStep = 8;
bool sparse(const Divisors& ascending) {
  for (size_t i = 1; i < ascending.size(); ++i)
    if (ascending[i] > ascending[i - 1] * kPartialLadderStep) return true;
  return false;
}

// After a register tile changed on `axis`, each outer level moves to the
// multiple of its inner tile nearest to its size (so cache blocks keep their
// footprint), or to the extent rounded up to it where it covered the axis;
// the last tile of each level is partial.
void realign_outer_tiles(StateData& s, const AnchorInfo& anchor, int axis) {
  const int64_t extent = anchor.plan_extent(axis);
  for (int l = s.reg_level() - 1; l >= 0; --l) {
    const int64_t inner = s.tile[l + 1][axis], cur = s.tile[l][axis];
    const int64_t nearest = std::max<int64_t>(1, (cur + inner / 2) / inner) * inner;
    s.tile[l][axis] = cur >= extent ? round_up(extent, inner) : std::min(nearest, round_up(extent, inner));
  }
}

// CPU register tiles step by one child (one row, one vector) rather than
// through the divisors of the cache tile: the register file, not the extent,
// bounds a micro-kernel (6x16 fills AVX2's 16 registers, and no power of two
// does), and the outer tiles follow it.
Reason register_tile_change(StateData& s, const AnchorInfo& anchor, int axis, bool grow) {
  const int reg = s.reg_level();
  const int64_t child = child_tile(s, reg, axis), cur = s.tile[reg][axis];
  const int64_t next = grow ? cur + child : cur - child;
  if (next < child) return {"tile already at its child's size"};
  if (next > round_up(anchor.plan_extent(axis), child)) return {"tile already covers the axis"};
  s.tile[reg][axis] = next;
  realign_outer_tiles(s, anchor, axis);
  return {};
}

Reason tile_change(StateData& s, const Step& st, const AnchorInfo& anchor, bool grow) {
  const int level = st.a, axis = st.b;
  if (level < 0 || level >= s.levels() || axis < 0 || axis >= s.num_axes) return {"no such level or axis"};
  if (anchor.is_reduce_axis(axis) && level == 0) return {"reduction axes are not split across threads"};
  if (anchor.is_reduce_axis(axis) && level == s.reg_level() && axis != s.vec_axis)
    return {"a reduction axis has a register tile only when vectorized"};
  const int64_t cur = s.tile[level][axis];
  const int64_t child = child_tile(s, level, axis);
  const int64_t parent = parent_tile(s, anchor, level, axis);
  if (level == 0) {
    // Level 0 doubles or halves (staying a multiple of the child), up to the
    // extent rounded up to the child: the last tile may be partial.
    const int64_t limit = round_up(parent, child);
    int64_t next = grow ? std::min(cur * 2, limit) : std::max(child, cur / 2 / child * child);
    if (next == cur) return {grow ? "tile already covers the axis" : "tile already at its child's size"};
    s.tile[0][axis] = next;
    return {};
  }
  if (level == s.reg_level() && s.target == TargetKind::Cpu) return register_tile_change(s, anchor, axis, grow);
  // A CPU reduction axis is one level-0 tile; its outermost cache tiles may
  // leave a partial last one, as spatial axes' do (the level-0 tile follows
  // as the extent rounded up to them), where the extent's divisors are too
  // sparse to block it: a prime count of steps (K = 771 = 3 x 257) then
  // still has blocks between a few steps and all of them. A window's taps
  // keep whole tiles (their loops are unrolled whole, and skip the padding
  // per tap).
  const bool reduction_outer = s.target == TargetKind::Cpu && level == 1 && anchor.is_reduce_axis(axis) &&
                               !anchor.is_window_tap(axis);
  const int64_t extent = reduction_outer ? anchor.plan_extent(axis) : parent;
  if (!reduction_outer && parent % child) return {"the parent tile is not a multiple of the inner tile"};
  // Inner levels take the sizes child * d for the divisors d of parent / child.
  const int64_t q = (extent + child - 1) / child;
  Divisors counts = divisors(q);
  if (reduction_outer && (extent % child || sparse(counts)))
    for (const int64_t d : divisors(round_up(q, kPartialLadderStep)))
      if (d < q) counts.push_back(d);
  int64_t best = 0;
  for (const int64_t d : counts) {
    const int64_t size = child * d;
    if (grow ? size > cur && (!best || size < best) : size < cur && size > best) best = size;
  }
  if (!best) return {grow ? "no larger tile divides the parent tile" : "no smaller tile is a multiple of the inner tile"};
  s.tile[level][axis] = best;
  if (reduction_outer) s.tile[0][axis] = round_up(extent, best);
  return {};
}

Reason grow(StateData& s, const Step& st, const AnchorInfo& an, const HwSpec&) { return tile_change(s, st, an, true); }
Reason shrink(StateData& s, const Step& st, const AnchorInfo& an, const HwSpec&) { return tile_change(s, st, an, false); }

Reason reorder(StateData& s, const Step& st, const AnchorInfo&, const HwSpec&) {
  if (st.a < 0 || st.a >= s.levels() || st.b < 0 || st.b + 1 >= int(s.order[st.a].size())) return {"no such loop position"};
  std::swap(s.order[st.a][st.b], s.order[st.a][st.b + 1]);
  return {};
}

Reason vectorize(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec& target) {
  const int axis = st.a, width = st.b;
  if (target.kind != TargetKind::Cpu) return {"vectorization is a CPU primitive"};
  if (width == 1) {
    if (s.vec_axis < 0) return {"already scalar"};
    if (anchor.is_reduce_axis(s.vec_axis)) s.tile[s.reg_level()][s.vec_axis] = 1;
    s.vec_axis = -1;
    s.vec_width = 1;
    return {};
  }
  if (axis < 0 || axis >= s.num_axes) return {"no such axis"};
  if (width < 2 || (width & (width - 1)) || width > target.cpu.fp32_lanes())
    return {"vector width {value} is not a power of two up to {limit} lanes", width, target.cpu.fp32_lanes()};
  if (anchor.is_reduce_axis(axis) && !anchor.is_reduction) return {"not a reduction"};
  if (s.vec_axis >= 0 && anchor.is_reduce_axis(s.vec_axis)) s.tile[s.reg_level()][s.vec_axis] = 1;
  s.vec_axis = axis;
  s.vec_width = width;
  int64_t& reg = s.tile[s.reg_level()][axis];
  reg = std::max<int64_t>(reg, width) / width * width;
  // Outer tiles that are not multiples of the width restart from the whole
  // axis rounded up to it; the rest of the extent runs as partial tiles.
  bool aligned = true;
  for (int l = 0; l < s.reg_level(); ++l) aligned &= s.tile[l][axis] % reg == 0;
  if (!aligned) {
    const int64_t whole = round_up(anchor.plan_extent(axis), reg);
    for (int l = 0; l < s.reg_level(); ++l) s.tile[l][axis] = whole;
  }
  return {};
}

Reason unroll(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec&) {
  if (st.a < 1 || st.a > 16 || (st.a & (st.a - 1))) return {"unroll factor must be 1, 2, 4, 8 or 16"};
  if (!anchor.is_reduction) return {"no reduction loop to unroll"};
  s.unroll = st.a;
  return {};
}

Reason pack(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec& target) {
  if (st.a < 0 || st.a >= int(s.pack.size())) return {"no such access"};
  if (target.kind == TargetKind::Gpu) {  // staged in shared memory at each reduction step, or not
    if (!anchor.is_reduction) return {"shared-memory staging needs a reduction step"};
    if (st.b >= 0 && st.b != s.make_pack_point(1, 0)) return {"a GPU pack point is the reduction step"};
    s.pack[st.a] = st.b;
    return {};
  }
  if (st.b >= 0) {
    int level = s.pack_level(st.b), pos = s.pack_position(st.b);
    if (level < 1 || level >= s.reg_level() || pos > int(s.order[level].size()))
      return {"pack point outside the cache levels"};
  }
  s.pack[st.a] = st.b;
  return {};
}

Reason fuse(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec&) {
  if (!anchor.consumer.defined()) return {"no element-wise consumer to fuse"};
  s.fuse = st.a != 0;
  return {};
}

Reason materialize(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec& target) {
  if (target.kind != TargetKind::Cpu) return {"materializing a producer is a CPU primitive"};
  if (st.a < 0 || st.a >= int(anchor.accesses.size()) || st.a >= StateData::kMaxMaterialized) return {"no such access"};
  if (!anchor.accesses[size_t(st.a)].guarded) return {"the input reads no guarded producer"};
  const uint32_t bit = 1u << st.a;
  s.materialize = st.b ? s.materialize | bit : s.materialize & ~bit;
  return {};
}

Reason vthread(StateData& s, const Step& st, const AnchorInfo& anchor, const HwSpec& target) {
  if (target.kind != TargetKind::Gpu) return {"virtual threads are a GPU primitive"};
  Step as_tile{st.b > 1 ? StepKind::TileGrow : StepKind::TileShrink, 1, st.a};
  return tile_change(s, as_tile, anchor, st.b > 1);
}

struct StepDef {
  StepKind kind;
  const char* name;
  Mutate apply;
};

const StepDef kSteps[] = {
    {StepKind::TileGrow, "tile_grow", grow},   {StepKind::TileShrink, "tile_shrink", shrink},
    {StepKind::Reorder, "reorder", reorder},   {StepKind::Vectorize, "vectorize", vectorize},
    {StepKind::Unroll, "unroll", unroll},      {StepKind::Pack, "pack", pack},
    {StepKind::Fuse, "fuse", fuse},            {StepKind::VThread, "vthread", vthread},
    {StepKind::Materialize, "materialize", materialize},
};

const StepDef& def(StepKind k) { return kSteps[int(k)]; }

int64_t pack_bytes(const StateData& s, const AnchorInfo& anchor, int access, int point) {
  const int level = s.pack_level(point);
  const Access& x = anchor.accesses[size_t(access)];
  std::vector<int64_t> extent(size_t(s.num_axes), 1);
  int64_t elems = 1;
  for (int a = 0; a < s.num_axes; ++a) {
    if (!x.uses_axis[a]) continue;
    const bool opened = s.pack_opens_loop(point, a);
    extent[a] = opened ? s.tile[level][a] : s.tile[level - 1][a];
    if (anchor.is_reduce_axis(a) && level - 1 == 0 && !opened) extent[a] = anchor.plan_extent(a);
    elems *= extent[a];
  }
  if (s.packs_halo(anchor, size_t(access))) elems = int64_t(x.data_tile(extent.data()));
  return elems * 4;
}

// Level 1 is the outermost private cache, level reg-1 the innermost.
int64_t cache_bytes_for_level(const StateData& s, const HwSpec& target, int level) {
  return private_cache_bytes(target.cpu, s.reg_level() - 1 - level);
}

Reason check_cpu(const StateData& s, const AnchorInfo& anchor, const HwSpec& target) {
  const int reg = s.reg_level();
  int64_t elems = 1;
  for (int a = 0; a < s.num_axes; ++a) elems *= s.tile[reg][a];
  const int lanes = s.vec_axis >= 0 ? s.vec_width : 1;
  const int64_t acc_regs = anchor.is_reduction ? (elems + lanes - 1) / lanes : 0;
  const int64_t operand_regs = s.vec_axis >= 0 ? s.tile[reg][s.vec_axis] / lanes + 1 : 2;
  if (acc_regs + operand_regs > target.cpu.vector_registers)
    return {"register tile needs {value} vector registers, hwspec has {limit}", acc_regs + operand_regs,
            target.cpu.vector_registers};
  if (elems > 512) return {"register tile of {value} elements is more than {limit} to unroll", elems, 512};
  // The unrolled reduction body: one vector operation per accumulator.
  const int64_t body = acc_regs * s.unroll;
  if (body > 128) return {"micro-kernel body of {value} unrolled vector operations exceeds {limit}", body, 128};
  for (size_t i = 0; i < s.pack.size(); ++i) {
    if (s.pack[i] < 0) continue;
    int level = s.pack_level(s.pack[i]);
    int64_t bytes = pack_bytes(s, anchor, int(i), s.pack[i]);
    if (bytes > cache_bytes_for_level(s, target, level))
      return {"packed buffer of {value} bytes exceeds its cache level's {limit} bytes", bytes,
              cache_bytes_for_level(s, target, level)};
    // Lowering sizes the buffer by the loops opened above the pack point;
    // above the outermost cache level's loop, a reduction axis of a size
    // known only at run time has no bound.
    for (int a = anchor.num_spatial; level == 1 && a < s.num_axes; ++a)
      if (anchor.accesses[i].uses_axis[a] && anchor.const_extent[size_t(a)] <= 0 && !s.pack_opens_loop(s.pack[i], a))
        return {"pack of input {value} spans reduction axis {limit}, whose size is known only at run time",
                int64_t(i), a};
  }
  return {};
}

Reason check_gpu(const StateData& s, const AnchorInfo& anchor, const HwSpec& target) {
  const GpuSpec& gpu = target.gpu;
  const GpuTiles g = GpuTiles::of(s, anchor);
  if (g.threads > gpu.max_threads_per_block)
    return {"block of {value} threads exceeds max_threads_per_block {limit}", g.threads, gpu.max_threads_per_block};
  const int64_t registers = gpu_register_estimate(s, anchor);
  if (registers > gpu.max_registers_per_thread)
    return {"thread tile needs about {value} registers, max {limit}", registers, gpu.max_registers_per_thread};
  const int64_t shared = g.shared_bytes(s, anchor, gpu.shared_memory_banks);
  if (shared > gpu.shared_memory_per_block)
    return {"staged tiles take {value} bytes of shared memory, the block has {limit}", shared,
            gpu.shared_memory_per_block};
  if (s.unroll > 1 && !anchor.is_reduction) return {"no reduction loop to unroll"};
  return {};
}

}  // namespace

const char* step_name(StepKind kind) { return def(kind).name; }

int64_t gpu_register_estimate(const StateData& s, const AnchorInfo& anchor) {
  const GpuTiles g = GpuTiles::of(s, anchor);
  // Accumulators; the operands of one reduction position (per access, the
  // thread's outputs it varies over: an outer product's two vectors), held
  // for two positions when the reduction loop is unrolled (ptxas keeps no
  // more), at 3/2 registers each (their addresses come along); and ~28 for
  // indices and pointers. The coefficients are a least-squares fit (relative
  // error) to ptxas's counts for construction's top-1 on the benchmark
  // shapes, sm_80 and sm_90.
  int64_t operands = 0;
  for (const Access& x : anchor.accesses) {
    int64_t n = 1;
    for (int a = 0; a < s.num_spatial; ++a)
      if (x.uses_axis[size_t(a)]) n *= g.vthreads[a] * g.thread_tile[a];
    operands += n;
  }
  if (!anchor.is_reduction) return 3 * operands / 2 + 16;  // no accumulators, loops or staged tiles
  return g.per_thread + 3 * operands * std::min(s.unroll, 2) / 2 + 28;
}

int64_t private_cache_bytes(const CpuSpec& cpu, int from_inner) {
  int count = 0;
  for (const CacheLevel& c : cpu.caches) count += c.shared_by_cores <= 1;
  if (count == 0) return 1 << 20;
  int want = std::min(count - 1, std::max(0, from_inner)), seen = 0;
  for (const CacheLevel& c : cpu.caches)
    if (c.shared_by_cores <= 1 && seen++ == want) return c.size_bytes;
  return 1 << 20;
}

std::string Step::str() const {
  std::ostringstream os;
  os << step_name(kind) << " " << a << " " << b;
  return os.str();
}

std::string Reason::str() const {
  if (!text) return "";
  std::string out = text;
  for (auto [key, v] : {std::pair<const char*, int64_t>{"{value}", value}, {"{limit}", limit}}) {
    size_t at = out.find(key);
    if (at != std::string::npos) out.replace(at, std::string(key).size(), std::to_string(v));
  }
  return out;
}

std::string check_legal(const StateData& s, const AnchorInfo& anchor, const HwSpec& target) {
  return legality(s, anchor, target).str();
}

Reason legality(const StateData& s, const AnchorInfo& anchor, const HwSpec& target) {
  for (int l = 0; l < s.levels(); ++l)
    for (int a = 0; a < s.num_axes; ++a) {
      // Most tiles equal their neighbours' or are 1: those need no division.
      const int64_t t = s.tile[l][a], child = child_tile(s, l, a), outer = l > 0 ? s.tile[l - 1][a] : t;
      if (t < 1 || (t != child && child != 1 && t % child))
        return {"tile {value} is not a multiple of its inner tile {limit}", t, child};
      if (outer != t && t != 1 && outer % t) return {"tile {value} does not divide its outer tile {limit}", t, outer};
    }
  return target.kind == TargetKind::Cpu ? check_cpu(s, anchor, target) : check_gpu(s, anchor, target);
}

StepResult apply_step(const StateData& state, const Step& step, const AnchorInfo& anchor, const HwSpec& target) {
  auto next = std::make_shared<StateData>(state);
  Reason why = def(step.kind).apply(*next, step, anchor, target);
  if (!why) why = legality(*next, anchor, target);
  if (why) return {nullptr, why};
  if (*next == state) return {nullptr, {"step changes nothing"}};
  next->trail = std::make_shared<StepTrail>(StepTrail{step, state.trail});
  return {next, {}};
}

bool offers_vector_along(const AnchorInfo& anchor, int a) {
  return (!anchor.is_reduce_axis(a) || anchor.is_reduction) && anchor.const_extent[size_t(a)] != 1;
}

std::vector<Step> candidate_steps(const StateData& s, const AnchorInfo& anchor, const HwSpec& target) {
  std::vector<Step> steps;
  for (int l = 0; l < s.levels(); ++l)
    for (int a = 0; a < s.num_axes; ++a) {
      if (anchor.is_reduce_axis(a) && (l == 0 || (l == s.reg_level() && a != s.vec_axis))) continue;
      steps.push_back({StepKind::TileGrow, l, a});
      steps.push_back({StepKind::TileShrink, l, a});
    }
  for (int l = 1; l < s.levels(); ++l)
    for (int p = 0; p + 1 < int(s.order[l].size()); ++p)
      if (target.kind != TargetKind::Cpu ||
          (!s.loop_runs_once(anchor, l, s.order[l][p]) && !s.loop_runs_once(anchor, l, s.order[l][p + 1])))
        steps.push_back({StepKind::Reorder, l, p});
  if (target.kind == TargetKind::Cpu) {
    const int lanes = target.cpu.fp32_lanes();
    for (int a = 0; a < s.num_axes; ++a)
      if (a != s.vec_axis && offers_vector_along(anchor, a)) steps.push_back({StepKind::Vectorize, a, lanes});
    if (s.vec_axis >= 0) steps.push_back({StepKind::Vectorize, s.vec_axis, 1});
    if (anchor.is_reduction) {
      if (s.unroll < 16) steps.push_back({StepKind::Unroll, s.unroll * 2, 0});
      if (s.unroll > 1) steps.push_back({StepKind::Unroll, s.unroll / 2, 0});
    }
    // Pack moves are local: unpack, or shift the pack point one loop in or
    // out (crossing level boundaries); an unpacked input starts innermost,
    // where its region is smallest.
    const int first = s.make_pack_point(1, 0);
    const int last = s.make_pack_point(s.reg_level() - 1, int(s.order[s.reg_level() - 1].size()));
    for (int i = 0; i < int(s.pack.size()); ++i) {
      if (s.pack[i] < 0) {
        steps.push_back({StepKind::Pack, i, last});
        continue;
      }
      steps.push_back({StepKind::Pack, i, -1});
      if (s.pack[i] > first) steps.push_back({StepKind::Pack, i, s.pack[i] - 1});
      if (s.pack[i] < last) steps.push_back({StepKind::Pack, i, s.pack[i] + 1});
    }
    for (int i = 0; i < int(anchor.accesses.size()); ++i)
      if (anchor.accesses[size_t(i)].guarded)
        steps.push_back({StepKind::Materialize, i, s.materialized(size_t(i)) ? 0 : 1});
  } else {
    for (int a = 0; a < s.num_spatial; ++a) {
      steps.push_back({StepKind::VThread, a, 2});
      steps.push_back({StepKind::VThread, a, 0});
    }
    if (anchor.is_reduction) {
      for (int i = 0; i < int(s.pack.size()); ++i)
        steps.push_back({StepKind::Pack, i, s.pack[size_t(i)] < 0 ? s.make_pack_point(1, 0) : -1});
      if (s.unroll < 8) steps.push_back({StepKind::Unroll, s.unroll * 2, 0});
      if (s.unroll > 1) steps.push_back({StepKind::Unroll, s.unroll / 2, 0});
    }
  }
  if (anchor.consumer.defined()) steps.push_back({StepKind::Fuse, s.fuse ? 0 : 1, 0});
  return steps;
}

}  // namespace loom
