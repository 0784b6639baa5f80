// The `construct` strategy: Markov-guided traversal of the state graph.
#pragma once

#include <vector>

#include "driver/strategy.h"

namespace loom {

std::vector<Candidate> construct_candidates(const Operator& op, const HwSpec& target, const CompileOptions& options);

}  // namespace loom
