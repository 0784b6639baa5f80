// Features of a schedule state for the learned cost model.
//
// In the spirit of Ansor's per-store features, computed in closed form from
// the state and the anchor's access analysis rather than by walking the
// lowered nest (the nest is a deterministic function of both):
//   - the analytic model's objectives (compute, traffic into each cache,
//     packing, penalties, balance, vector use, ILP), so the learned model
//     corrects the analytic one instead of starting from nothing;
//   - loop structure: tile extents per level and axis, trip counts per
//     level, vector width, unroll, accumulators, parallel tiles;
//   - per buffer (the first kMaxAccesses reads and the output): bytes of
//     its data tile at every level (unique bytes), the trips that reuse it,
//     its stride along the vector axis, packed or not and where;
//   - arithmetic intensity per level: flops over the bytes the level moves.
// Counts and sizes enter as log2(1 + x), as in Ansor.
#pragma once

#include <vector>

#include "schedule/state.h"
#include "schedule/task.h"

namespace loom {

constexpr int kMaxAccesses = 4;

// The feature vector of `state` on `task`; its length is feature_count().
std::vector<float> state_features(const Task& task, const StateData& state);
int feature_count();

}  // namespace loom
