#include "construct/construct.h"

#include <algorithm>

#include "construct/roller.h"

namespace loom {

namespace {

// The unroll of the innermost reduction loop in the states CPU construction
// emits. The analytic model does not see unroll (loop overhead and the
// scheduling of the body, not traffic or FMAs), so the walk reaches one by
// chance, on moves its estimates call neutral; tuning's mutations still
// change it. Measured on one AMD Zen 3 core, interleaved in one process,
// over 34 benchmark GEMMs and convolutions: construction's top-1 unrolled 4
// took 0.92-0.94x the time of the same state unrolled 1 (geomean of two
// runs; 2: 1.02-1.03x, 8: 0.94-0.96x).
constexpr int kConstructionUnroll = 4;

// `s` unrolled kConstructionUnroll times, or as near below as the body limit
// allows.
State with_construction_unroll(const State& s, const AnchorInfo& anchor, const HwSpec& target) {
  if (target.kind != TargetKind::Cpu || !anchor.is_reduction) return s;
  for (int u = kConstructionUnroll; u > 1; u /= 2) {
    if (s->unroll == u) return s;
    if (StepResult r = apply_step(*s, {StepKind::Unroll, u, 0}, anchor, target)) return r.state;
  }
  return s;
}

}  // namespace

std::vector<RankedState> construct_states(const Task& task, int k, const ConstructOptions& options) {
  const AnchorInfo& anchor = *task.anchor;
  const size_t keep = size_t(std::max(1, k));
  TraversalOptions t;
  // States that differ only in unroll become one below, and the unroll
  // re-ranks them: at least as many as the top 10 draws on are ranked, so
  // that top-1 is top-10's first (drawn from the walk's best 2 alone, a
  // 5x5/2 convolution's top-1 was its 3rd, 1.7x slower).
  constexpr size_t kRankedAfterUnroll = 20;
  t.top_k = int(std::max(2 * keep, kRankedAfterUnroll));
  t.walk_steps = options.walk_steps;
  t.temperature = options.temperature;
  t.seed = options.seed;
  t.threads = task.threads;
  // Seeds: the rule-based starting points and the Roller tree's best leaf;
  // the multi-objective walk refines from all of them.
  std::vector<State> seeds = seed_states(anchor, task.target);
  for (const State& s : roller_states(anchor, task.target, t.threads, 1)) seeds.push_back(s);
  // The states emitted are ranked as emitted, unrolled: the unroll changes
  // how often each load of the reduction loop runs in a row, which decides
  // whether a stride prefetcher follows it (read_at_constant_stride). So the
  // register block best for the walk's unroll may not be for this one: the
  // walk's best few states' best blocks at this unroll are ranked beside
  // them (all 20 took construction from 11.7 to 15.7 ms, mean over 90
  // shapes), and so is the best block of the best state at this unroll,
  // which the walk may have ranked lower (so top-1's block is the best
  // its neighbours offer; reblocking the best 4 at this unroll instead
  // picked 5x5/2 convolutions' blocks 1.4x slower on the AVX2 spec).
  constexpr size_t kReblocked = 4;
  std::vector<RankedState> unrolled;
  auto add = [&](const State& s, const RankedState& walked) {
    if (std::any_of(unrolled.begin(), unrolled.end(), [&](const RankedState& o) { return *o.state == *s; })) return;
    unrolled.push_back({s, s == walked.state ? walked.estimate : estimate(anchor, *s, task.target, t.threads)});
  };
  EstimateMemo memo(anchor, task.target, t.threads);
  const auto rank = [&] {
    std::stable_sort(unrolled.begin(), unrolled.end(), [](const RankedState& a, const RankedState& b) {
      return a.estimate.seconds < b.estimate.seconds;
    });
  };
  const std::vector<RankedState> walked = traverse_state_graph(seeds, t, memo).top;
  for (size_t i = 0; i < walked.size(); ++i) {
    const State s = with_construction_unroll(walked[i].state, anchor, task.target);
    add(s, walked[i]);
    if (task.target.kind == TargetKind::Cpu && i < kReblocked) add(best_register_block(s, memo), walked[i]);
  }
  rank();
  if (task.target.kind == TargetKind::Cpu && !unrolled.empty()) {
    const RankedState best = unrolled.front();  // add() may move it
    add(best_register_block(best.state, memo), best);
    rank();
  }
  if (unrolled.size() > keep) unrolled.resize(keep);
  return unrolled;
}

std::unique_ptr<Tuner> make_construct_tuner(const Task& task, const ConstructOptions& options) {
  return std::make_unique<ProposeOnceTuner>([&task, options](int n) {
    std::vector<Candidate> out;
    for (const RankedState& r : construct_states(task, n, options))
      out.push_back(make_candidate(task, r.state, r.estimate.seconds));
    return out;
  });
}

}  // namespace loom
