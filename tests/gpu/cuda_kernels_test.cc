// On a CUDA device: every operator's GPU kernels (construct top-3, roller
// top-1 and random legal states for the device's spec) run through the CUDA
// driver and match the reference executor, at awkward sizes and at whole
// benchmark-like sizes where vector loads and full tiles are taken. Skips
// itself without a device.
#include "gpu_check/gpu_cases.h"
#include "runtime/gpu/cuda_driver.h"
#include "schedule/task.h"

namespace loom {
namespace {

using test::OpCase;

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

// Why no CUDA device can run kernels here; empty where one can.
std::string no_device() {
  std::string why;
  return cuda_device_available(&why) ? "" : why.empty() ? "no CUDA device" : why;
}

void expect_states_match(const OpCase& c, int random_states, int64_t max_points = 1 << 16) {
  Operator op = make_operator(c.op, c.params);
  const HwSpec hw = device_spec();
  Task task = make_task(op, hw, 1);
  auto inputs = random_inputs(op, 13);
  for (const auto& [source, state] : test::gpu_test_states(task, hw, test::case_name(c), random_states)) {
    const std::string ran_on = test::expect_state_matches(op, task, hw, source, state, inputs, false, max_points);
    if (ran_on.empty()) return;  // the fault left the context unusable
    EXPECT_EQ(ran_on, "cuda");
  }
}

class CudaKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaKernels, ConstructRollerAndRandomStatesMatchTheReferenceOnTheDevice) {
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  expect_states_match(GetParam(), 11);
}

INSTANTIATE_TEST_SUITE_P(Gpu, CudaKernels, ::testing::ValuesIn(test::gpu_cases()),
                         [](const auto& info) { return test::case_name(info.param); });

// Sizes the tiles divide, as the benchmark shapes are: whole tiles, vectorized staging, many blocks.
std::vector<OpCase> whole_cases() {
  auto conv = [](const char* hw, const char* c, const char* k) {
    return OpCase{"conv2d", {{"N", "1"}, {"H", hw}, {"W", hw}, {"CI", c}, {"CO", c}, {"KH", k}, {"KW", k},
                             {"pad", std::string(k) == "3" ? "1" : "0"}}};
  };
  return {{"matmul", {{"M", "512"}, {"N", "512"}, {"K", "512"}}},
          {"matmul", {{"M", "512"}, {"N", "32"}, {"K", "512"}}},
          {"dense", {{"M", "128"}, {"N", "768"}, {"K", "256"}, {"epilogue", "bias_gelu"}}},
          conv("14", "256", "3"),
          conv("56", "64", "1"),
          {"softmax", {{"M", "256"}, {"N", "768"}}},
          {"layernorm", {{"M", "128"}, {"N", "1024"}}}};
}

class CudaWholeKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaWholeKernels, ConstructRollerAndRandomStatesMatchTheReferenceOnTheDevice) {
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  expect_states_match(GetParam(), 3, 4096);
}

INSTANTIATE_TEST_SUITE_P(Gpu, CudaWholeKernels, ::testing::ValuesIn(whole_cases()),
                         [](const auto& info) { return test::case_name(info.param); });

TEST(CudaKernels, SymbolicSizesAndEveryStrategyThroughCompile) {
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  CompileOptions options;
  options.target = device_spec();
  for (const char* strategy : {"construct", "roller", "default"}) {
    options.strategy = strategy;
    Operator dense = make_operator("dense", {{"N", "33"}, {"K", "19"}, {"epilogue", "bias_gelu"}}, {"M"});
    Kernel k = compile(dense, options);
    for (int64_t m : {1, 7, 70, 1000}) {
      CheckResult r = test::run_and_check(dense, k, random_inputs(dense, 3, {m}));
      EXPECT_TRUE(r.ok) << strategy << " M=" << m << ": " << r.max_rel_err;
    }
    EXPECT_EQ(k.executed_on(), "cuda");
  }
}

}  // namespace
}  // namespace loom
