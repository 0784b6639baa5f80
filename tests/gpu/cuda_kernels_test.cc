// On a CUDA device: every operator's GPU kernels (construct top-3 and roller
// top-1 for the device's spec) run through the CUDA driver and match the
// reference executor. Skips itself without a device.
#include "construct/construct.h"
#include "construct/roller.h"
#include "driver/compile_schedule.h"
#include "gpu_check/gpu_cases.h"
#include "runtime/gpu/cuda_driver.h"
#include "schedule/schedule.h"
#include "schedule/task.h"

namespace loom {
namespace {

// The bundled spec of the device's compute capability, else h100's limits.
HwSpec device_spec() {
  const std::string cc = cuda_device_compute_capability();
  for (const std::string& name : bundled_hwspec_names()) {
    HwSpec s = load_hwspec(name);
    if (s.kind == TargetKind::Gpu && s.gpu.compute_capability == cc) return s;
  }
  HwSpec s = load_hwspec("h100");
  s.gpu.compute_capability = cc;
  return s;
}

class CudaKernels : public ::testing::TestWithParam<test::OpCase> {};

TEST_P(CudaKernels, ConstructAndRollerMatchTheReferenceOnTheDevice) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  Operator op = make_operator(GetParam().op, GetParam().params);
  const HwSpec hw = device_spec();
  Task task = make_task(op, hw, 1);
  std::vector<State> states;
  for (const RankedState& r : construct_states(task, 3, {})) states.push_back(r.state);
  for (const State& s : roller_states(*task.anchor, hw, 1, 1)) states.push_back(s);
  auto inputs = random_inputs(op, 13);
  for (const State& state : states) {
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
    CheckResult r = test::run_and_check(op, k, inputs);
    EXPECT_TRUE(r.ok) << state->str() << ": max_rel_err " << r.max_rel_err;
    EXPECT_EQ(k.executed_on(), "cuda");
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, CudaKernels, ::testing::ValuesIn(test::gpu_cases()),
                         [](const auto& info) { return test::case_name(info.param); });

}  // namespace
}  // namespace loom
