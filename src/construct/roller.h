// The `roller` strategy: Roller's tree construction in loom's state space.
//
// Top-down over the memory levels (outermost private cache, then inner
// caches, then registers): start each level from the smallest aligned tile
// (the vector width on the vector axis, 1 elsewhere), and grow it one axis
// at a time, always along the axis with the best data-reuse score
//   S_i = (Q(T) - Q(T_i')) / (F(T_i') - F(T)),
// where Q is the level's memory traffic, F its footprint and T_i' the tile
// grown along axis i to its next aligned size, until the level's capacity
// is exhausted; then descend a level. Level 0 scales the outer tile out
// until there are enough tiles for the threads. Inputs are staged at the
// outermost cache tile (Roller's shared-memory tiles). One objective only:
// traffic. Branching at the first growth decision of each level (the three
// best axes at the outer cache, the two best below) yields a tree of 12
// leaves, ranked by traffic; the top K are emitted. The model's traffic term
// (analytic_model.h) is the traffic measure. On a GPU the levels are the
// thread tile (registers) and the block tile (shared memory), as in Roller's
// paper (see GpuRoller in roller.cc).
#pragma once

#include <vector>

#include "schedule/state.h"
#include "schedule/tuner.h"

namespace loom {

// Proposes the tree's top-n leaves once.
std::unique_ptr<Tuner> make_roller_tuner(const Task& task);

struct AnchorInfo;
// The tree's leaves, best first by traffic (at most k).
std::vector<State> roller_states(const AnchorInfo& anchor, const HwSpec& target, int threads, int k);

}  // namespace loom
