#include "construct/construct.h"

#include "construct/state_graph.h"
#include "schedule/anchor.h"

namespace loom {

std::vector<Candidate> construct_candidates(const Operator& op, const HwSpec& target, const CompileOptions& options) {
  AnchorInfo anchor = analyze_anchor(op);
  TraversalOptions t;
  t.top_k = std::max(1, options.top_k);
  t.walk_steps = options.walk_steps;
  t.temperature = options.temperature;
  t.seed = options.seed;
  t.threads = options.threads > 0 ? options.threads : std::max(1, target.cpu.cores);
  TraversalResult result = traverse_state_graph(anchor, target, seed_states(anchor, target), t);
  std::vector<Candidate> out;
  for (const RankedState& r : result.top)
    out.push_back({schedule_with_state(op, target, r.state), r.estimate.seconds});
  return out;
}

}  // namespace loom
