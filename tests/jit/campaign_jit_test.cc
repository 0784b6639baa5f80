// A deterministic randomized campaign: random operators of the registry at
// random, awkward sizes, compiled under random strategies and random legal
// states, each checked against the reference executor on every output
// point. CI runs a fixed seed; LOOM_CAMPAIGN_SEED=<n> LOOM_CAMPAIGN_CASES=<k>
// runs any other by hand.
#include <cstdlib>
#include <random>

#include "driver/compile_schedule.h"
#include "schedule/task.h"
#include "search/state_moves.h"
#include "test_util.h"

namespace loom {
namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::map<std::string, std::string> random_params(const OperatorInfo& info, Rng& rng) {
  static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33};
  std::map<std::string, std::string> p;
  for (const ParamSpec& s : info.params) {
    if (s.kind == ParamKind::Choice) {
      p[s.name] = s.choices[rng() % s.choices.size()];
    } else if (s.name == "pad" || s.name == "dilation" || s.name == "stride" || s.name == "groups") {
      p[s.name] = std::to_string(s.name == "pad" ? rng() % 3 : 1 + rng() % 2);
    } else {
      p[s.name] = std::to_string(sizes[rng() % std::size(sizes)]);
    }
  }
  return p;
}

TEST(Campaign, RandomOperatorsSizesAndStatesMatchTheReference) {
  const uint64_t seed = env_or("LOOM_CAMPAIGN_SEED", 20261122);
  const int cases = int(env_or("LOOM_CAMPAIGN_CASES", 40));
  Rng rng(seed);
  const HwSpec hw = detect_host_cpu();
  int compiled = 0, rejected = 0;
  for (int c = 0; c < cases; ++c) {
    const OperatorInfo& info = list_operators()[rng() % list_operators().size()];
    const auto params = random_params(info, rng);
    Operator op;
    try {
      op = make_operator(info.name, params);
    } catch (const UserError&) {
      ++rejected;  // sizes that do not compose: a clean error is the right outcome
      continue;
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + " case " + std::to_string(c) + ": " +
                 test::case_name({info.name, params}));
    Kernel k;
    const int how = int(rng() % 3);
    if (how < 2) {
      CompileOptions o;
      o.strategy = how == 0 ? "default" : "construct";
      o.walk_steps = 60;
      o.threads = 1;
      k = compile(op, o);
    } else {
      Task task = make_task(op, hw, 1);
      State s = random_walk(task, initial_state(*task.anchor, hw), 4 + int(rng() % 40), rng);
      k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    }
    CheckResult r = test::run_and_check(op, k, random_inputs(op, seed + uint64_t(c)), 1 << 20);
    EXPECT_TRUE(r.ok) << "max_rel_err " << r.max_rel_err << "\n" << k.report().schedule;
    ++compiled;
  }
  EXPECT_GE(compiled, cases / 2) << rejected << " cases were rejected as invalid";
}

}  // namespace
}  // namespace loom
