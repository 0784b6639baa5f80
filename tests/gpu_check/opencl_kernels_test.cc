// GPU kernels checked without a GPU: every operator's GPU kernels (construct
// top-3, roller top-1 and random legal GPU states) run as their OpenCL twin
// (PoCL on the CPU) and are compared with the reference executor.
#include "construct/construct.h"
#include "construct/roller.h"
#include "driver/compile_schedule.h"
#include "gpu_cases.h"
#include "random_states.h"
#include "runtime/gpu/opencl_runner.h"
#include "schedule/schedule.h"
#include "schedule/task.h"

namespace loom {
namespace {

using test::OpCase;

#ifdef LOOM_SANITIZED_BUILD
constexpr int kRandomStates = 3;
#else
constexpr int kRandomStates = 11;
#endif

void skip_without_opencl() {
  std::string why;
  if (opencl_available(&why)) return;
  if (test::required("LOOM_REQUIRE_OPENCL")) FAIL() << "LOOM_REQUIRE_OPENCL=1 and no OpenCL: " << why;
  GTEST_SKIP() << "no OpenCL runtime: " << why;
}

class OpenClKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpenClKernels, ConstructRollerAndRandomStatesMatchTheReference) {
  skip_without_opencl();
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFailure()) return;
  Operator op = make_operator(GetParam().op, GetParam().params);
  // Two GPU specs: different limits give different legal states.
  const HwSpec hw = load_hwspec(std::hash<std::string>()(test::case_name(GetParam())) % 2 ? "h100" : "v100");
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  std::vector<std::pair<std::string, State>> states;
  for (const RankedState& r : construct_states(task, 3, {})) states.emplace_back("construct", r.state);
  for (const State& s : roller_states(anchor, hw, 1, 1)) states.emplace_back("roller", s);
  std::mt19937_64 rng(std::hash<std::string>()(test::case_name(GetParam())));
  for (int i = 0; i < kRandomStates; ++i)
    states.emplace_back("random", test::random_state(anchor, hw, rng, 6 + 3 * i));
  auto inputs = random_inputs(op, 11);
  int staged = 0, vthreads = 0;
  for (const auto& [source, state] : states) {
    ASSERT_EQ(check_legal(*state, anchor, hw), "");
    for (int p : state->pack) staged += p >= 0;
    for (int a = 0; a < anchor.num_spatial; ++a) vthreads += state->tile[0][a] > state->tile[1][a];
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
    CheckResult r = test::run_and_check(op, k, inputs);
    EXPECT_TRUE(r.ok) << source << " state " << state->str() << " on " << hw.name << ": max_rel_err "
                      << r.max_rel_err << "\n" << k.source(true);
    EXPECT_EQ(k.executed_on().rfind("opencl", 0), 0u) << k.executed_on();
  }
  // The states exercise what GPU lowering has to get right.
  if (anchor.is_reduction) EXPECT_GT(staged, 0) << "no state staged an input in shared memory";
  RecordProperty("states", int(states.size()));
  RecordProperty("vthread_states", vthreads);
}

INSTANTIATE_TEST_SUITE_P(Gpu, OpenClKernels, ::testing::ValuesIn(test::gpu_cases()),
                         [](const auto& info) { return test::case_name(info.param); });

TEST(OpenClKernels, SymbolicSizesAndEveryStrategyThroughCompile) {
  skip_without_opencl();
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFailure()) return;
  CompileOptions options;
  options.target = load_hwspec("h100");
  for (const char* strategy : {"construct", "roller", "default"}) {
    options.strategy = strategy;
    Operator dense = make_operator("dense", {{"N", "33"}, {"K", "19"}, {"epilogue", "bias_gelu"}}, {"M"});
    Kernel k = compile(dense, options);
    for (int64_t m : {1, 7, 70}) {
      CheckResult r = test::run_and_check(dense, k, random_inputs(dense, 3, {m}));
      EXPECT_TRUE(r.ok) << strategy << " M=" << m << ": " << r.max_rel_err;
    }
    EXPECT_EQ(k.executed_on(), "opencl-cpu");
    EXPECT_NE(k.source().find("__global__"), std::string::npos) << "CUDA C expected";
    EXPECT_NE(k.source(true).find("__kernel"), std::string::npos) << "OpenCL C expected";
  }
}

TEST(OpenClKernels, LegalityReadsTheGpuSpec) {
  Operator op = make_operator("matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}});
  AnchorInfo anchor = analyze_anchor(op);
  for (const char* name : {"v100", "h100"}) {
    HwSpec hw = load_hwspec(name);
    State s = initial_state(anchor, hw);
    // One thread per block, then more threads along both axes until the block is too large.
    std::string why;
    for (int i = 0; i < 40 && why.empty(); ++i) {
      const int axis = i % 2;
      StepResult grown = apply_step(*s, {StepKind::TileGrow, 0, axis}, anchor, hw);
      if (grown) s = grown.state;
      StepResult threads = apply_step(*s, {StepKind::TileGrow, 1, axis}, anchor, hw);
      if (threads) s = threads.state;
      else if (!grown) why = threads.why();
    }
    EXPECT_NE(why.find("max_threads_per_block " + std::to_string(hw.gpu.max_threads_per_block)), std::string::npos)
        << name << ": " << why;
  }
}

}  // namespace
}  // namespace loom
