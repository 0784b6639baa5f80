#include "construct/construct.h"

#include "construct/roller.h"
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
  // Seeds: the rule-based starting points and the Roller tree's best leaf;
  // the multi-objective walk refines from all of them.
  std::vector<State> seeds = seed_states(anchor, target);
  if (target.kind == TargetKind::Cpu)
    for (const State& s : roller_states(anchor, target, t.threads, 1)) seeds.push_back(s);
  TraversalResult result = traverse_state_graph(anchor, target, seeds, t);
  std::vector<Candidate> out;
  for (const RankedState& r : result.top)
    out.push_back({schedule_with_state(op, target, r.state), r.estimate.seconds});
  return out;
}

}  // namespace loom
