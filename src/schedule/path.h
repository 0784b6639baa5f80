// A step path from the initial state to any legal state.
//
// States built by rules rather than walks (Roller's tree) still carry a step
// list that replays to them, so every emitted state prints, serializes and
// replays the same way.
#pragma once

#include "schedule/anchor.h"
#include "schedule/state.h"

namespace loom {

// The state `goal` with a history that replays to it, or null when the
// canonical path cannot reach it.
State state_with_path(const AnchorInfo& anchor, const HwSpec& target, const StateData& goal);

}  // namespace loom
