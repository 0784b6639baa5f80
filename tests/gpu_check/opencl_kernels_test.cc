// GPU kernels checked without a GPU: every operator's GPU kernels (construct
// top-3, roller top-1 and random legal GPU states) run as their OpenCL twin
// (PoCL on the CPU) and are compared with the reference executor.
#include "codegen/backend.h"
#include "gpu_cases.h"
#include "runtime/gpu/cuda_driver.h"
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
  const auto states = test::gpu_test_states(task, hw, test::case_name(GetParam()), kRandomStates);
  auto inputs = random_inputs(op, 11);
  int staged = 0, vthreads = 0;
  for (const auto& [source, state] : states) {
    ASSERT_EQ(check_legal(*state, anchor, hw), "");
    for (int p : state->pack) staged += p >= 0;
    for (int a = 0; a < anchor.num_spatial; ++a) vthreads += state->tile[0][a] > state->tile[1][a];
    const std::string ran_on = test::expect_state_matches(op, task, hw, source, state, inputs, true);
    EXPECT_EQ(ran_on.rfind("opencl", 0), 0u) << ran_on;
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

// A hand-lowered GPU function: one block of 4 threads, thread t copies X[t + shift] into Y[t] (4 floats each).
LoweredFunc shifted_copy(int64_t shift) {
  auto x = std::make_shared<BufferNode>(BufferNode{"X", DType::f32(), {make_int(4)}});
  auto y = std::make_shared<BufferNode>(BufferNode{"Y", DType::f32(), {make_int(4)}});
  Var block("block"), thread("thread");
  Stmt copy = make_store(y, Expr(thread), make_load(x, Expr(thread) + make_int(shift)));
  return {"shifted_copy", {x, y}, {}, make_gpu_launch("shifted_copy_0", make_int(1), 4, block, thread, copy)};
}

TEST(OpenClKernels, TheTwinReportsAnAccessOutsideItsBuffer) {
  skip_without_opencl();
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFailure()) return;
  if (cuda_device_available()) GTEST_SKIP() << "a CUDA device runs the kernels, not their OpenCL twin";
  auto backend = codegen::make_backend(load_hwspec("h100"));
  std::vector<float> x = {1, 2, 3, 4}, y(4, 0.0f);
  void* buffers[] = {x.data(), y.data()};
  backend->compile(shifted_copy(0))->call(buffers, nullptr);
  EXPECT_EQ(y, x);
  try {
    backend->compile(shifted_copy(1))->call(buffers, nullptr);  // thread 3 reads X[4]
    ADD_FAILURE() << "no fault reported";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("shifted_copy: a kernel accessed X outside its bounds"), std::string::npos)
        << e.what();
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
