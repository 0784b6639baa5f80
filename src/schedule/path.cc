#include "schedule/path.h"

#include <algorithm>

namespace loom {

namespace {

bool apply(State& s, const Step& step, const AnchorInfo& anchor, const HwSpec& target) {
  StepResult r = apply_step(*s, step, anchor, target);
  if (r) s = r.state;
  return bool(r);
}

// Moves tile[l][a] towards `want` one allowed size at a time.
bool move_tile(State& s, int l, int a, int64_t want, const AnchorInfo& anchor, const HwSpec& target) {
  for (int guard = 0; guard < 4096 && s->tile[l][a] != want; ++guard) {
    StepKind k = s->tile[l][a] > want ? StepKind::TileShrink : StepKind::TileGrow;
    if (!apply(s, {k, l, a}, anchor, target)) return false;
    if (k == StepKind::TileShrink ? s->tile[l][a] < want : s->tile[l][a] > want) return false;
  }
  return s->tile[l][a] == want;
}

bool move_cache_and_parallel_tiles(State& s, const StateData& goal, const AnchorInfo& anchor, const HwSpec& target) {
  for (int l = s->reg_level() - 1; l >= 1; --l)
    for (int a = 0; a < s->num_axes; ++a)
      if (!move_tile(s, l, a, goal.tile[l][a], anchor, target)) return false;
  for (int a = 0; a < s->num_spatial; ++a)
    if (!move_tile(s, 0, a, goal.tile[0][a], anchor, target)) return false;
  return true;
}

bool move_register_tiles(State& s, const StateData& goal, const AnchorInfo& anchor, const HwSpec& target) {
  for (int a = 0; a < s->num_axes; ++a)
    if (!move_tile(s, s->reg_level(), a, goal.tile[s->reg_level()][a], anchor, target)) return false;
  return true;
}

// A register step moves the outer tiles to multiples of the new size, so the
// sizes passed through can leave them off the goal's. Registers go first while
// the outer tiles still cover their axes (each step then resets them to the
// extent rounded up, whatever came before), then the cache levels inner to
// outer and the parallel level, whose steps move only their own tile; where
// that cannot reach the goal (its cache tiles do not divide that rounded
// extent), registers go last (the caller checks the state it reaches).
bool move_cpu_tiles(State& s, const StateData& goal, const AnchorInfo& anchor, const HwSpec& target) {
  State registers_first = s;
  if (move_register_tiles(registers_first, goal, anchor, target) &&
      move_cache_and_parallel_tiles(registers_first, goal, anchor, target)) {
    s = registers_first;
    return true;
  }
  return move_cache_and_parallel_tiles(s, goal, anchor, target) && move_register_tiles(s, goal, anchor, target);
}

// GPU tiles grow together (a block tile alone would be one thread with too
// many outputs): repeatedly take the innermost growth that stays legal, does
// not pass the goal and divides the goal's outer tile, until none is left.
bool grow_gpu_tiles(State& s, const StateData& goal, const AnchorInfo& anchor, const HwSpec& target) {
  for (bool moved = true; moved;) {
    moved = false;
    for (int l = s->reg_level(); l >= 0 && !moved; --l)
      for (int a = 0; a < s->num_axes && !moved; ++a) {
        if (s->tile[l][a] >= goal.tile[l][a]) continue;
        StepResult r = apply_step(*s, {StepKind::TileGrow, l, a}, anchor, target);
        // An inner tile only takes sizes dividing its goal's outer tile (else that one could not be reached).
        const int64_t next = r ? r.state->tile[l][a] : 0;
        if (r && next <= goal.tile[l][a] && (l == 0 || goal.tile[l - 1][a] % next == 0)) {
          s = r.state;
          moved = true;
        }
      }
  }
  return s->tile == goal.tile;
}

}  // namespace

State state_with_path(const AnchorInfo& anchor, const HwSpec& target, const StateData& goal) {
  State s = initial_state(anchor, target);
  if (goal.vec_axis >= 0 && !apply(s, {StepKind::Vectorize, goal.vec_axis, goal.vec_width}, anchor, target))
    return nullptr;
  // Loop orders: bubble each level into place with adjacent swaps.
  for (int l = 0; l < s->levels(); ++l)
    for (bool swapped = true; swapped;) {
      swapped = false;
      for (size_t p = 0; p + 1 < s->order[l].size(); ++p) {
        auto rank = [&](int axis) {
          return std::find(goal.order[l].begin(), goal.order[l].end(), axis) - goal.order[l].begin();
        };
        if (rank(s->order[l][p]) > rank(s->order[l][p + 1])) {
          if (!apply(s, {StepKind::Reorder, l, int(p)}, anchor, target)) return nullptr;
          swapped = true;
        }
      }
    }
  const bool tiles = target.kind == TargetKind::Gpu ? grow_gpu_tiles(s, goal, anchor, target)
                                                    : move_cpu_tiles(s, goal, anchor, target);
  if (!tiles) return nullptr;
  if (goal.unroll != s->unroll && !apply(s, {StepKind::Unroll, goal.unroll, 0}, anchor, target)) return nullptr;
  for (size_t i = 0; i < goal.pack.size(); ++i) {
    if (goal.pack[i] != s->pack[i] && !apply(s, {StepKind::Pack, int(i), goal.pack[i]}, anchor, target)) return nullptr;
    if (goal.materialized(i) != s->materialized(i) &&
        !apply(s, {StepKind::Materialize, int(i), goal.materialized(i) ? 1 : 0}, anchor, target))
      return nullptr;
  }
  if (goal.fuse != s->fuse && !apply(s, {StepKind::Fuse, goal.fuse ? 1 : 0, 0}, anchor, target)) return nullptr;
  return *s == goal ? s : nullptr;
}

}  // namespace loom
