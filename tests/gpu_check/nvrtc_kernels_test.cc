// The CUDA C of construction's top-1 for the benchmark shapes, compiled by
// NVRTC for sm_80 and sm_90: it must compile, ptxas must report no spills,
// registers within the spec's limit and shared memory within the block's.
// The model's register estimate is checked for gross errors here (within a
// factor of 2); how close it is (the 25% target) is a figure of
// benchmarks/bench_gpu.cc.
#include "codegen/gpu/nvrtc.h"
#include "construct/construct.h"
#include "driver/compile_schedule.h"
#include "gpu_cases.h"
#include "schedule/schedule.h"
#include "schedule/task.h"

namespace loom {
namespace {

using test::OpCase;

std::vector<OpCase> benchmark_shapes() {
  return {
      {"matmul", {{"M", "128"}, {"N", "128"}, {"K", "128"}}},
      {"matmul", {{"M", "512"}, {"N", "32"}, {"K", "512"}}},
      {"matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}}},
      {"matmul", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}}},
      {"conv2d", {{"N", "1"}, {"H", "224"}, {"W", "224"}, {"CI", "3"}, {"CO", "64"}, {"KH", "7"}, {"KW", "7"},
                  {"stride", "2"}, {"pad", "3"}}},
      {"conv2d", {{"N", "1"}, {"H", "56"}, {"W", "56"}, {"CI", "64"}, {"CO", "64"}, {"KH", "1"}, {"KW", "1"}}},
      {"conv2d", {{"N", "1"}, {"H", "14"}, {"W", "14"}, {"CI", "256"}, {"CO", "256"}, {"KH", "3"}, {"KW", "3"},
                  {"pad", "1"}}},
      {"conv2d",
       {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"CI", "512"}, {"CO", "512"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"depthwise_conv2d",
       {{"N", "1"}, {"H", "112"}, {"W", "112"}, {"C", "32"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"dense", {{"M", "128"}, {"N", "3072"}, {"K", "768"}, {"epilogue", "bias_gelu"}}},
      {"softmax", {{"M", "1536"}, {"N", "128"}}},
      {"layernorm", {{"M", "128"}, {"N", "768"}}},
  };
}

class NvrtcKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(NvrtcKernels, ConstructTopOneCompilesWithoutSpills) {
  std::string why;
  if (!codegen::nvrtc_available(&why)) {
    if (test::required("LOOM_REQUIRE_NVRTC")) FAIL() << "LOOM_REQUIRE_NVRTC=1 and no NVRTC: " << why;
    GTEST_SKIP() << why;
  }
  Operator op = make_operator(GetParam().op, GetParam().params);
  for (const char* spec : {"a100", "h100"}) {
    const HwSpec hw = load_hwspec(spec);
    Task task = make_task(op, hw, 1);
    const State state = construct_states(task, 1, {}).front().state;
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
    const std::string arch = codegen::sm_arch(hw.gpu.compute_capability);
    codegen::NvrtcOutput out = codegen::nvrtc_compile(k.source(), op.name, arch, true);
    ASSERT_FALSE(out.kernels.empty()) << "no ptxas report:\n" << out.log;
    const std::string anchor_kernel_tag = "_" + task.anchor->stage.name() + "_";
    for (const auto& [name, r] : out.kernels) {
      EXPECT_EQ(r.spill_bytes, 0) << name << " on " << arch << " spills; state " << state->str();
      EXPECT_GT(r.registers, 0) << name;
      EXPECT_LE(r.registers, hw.gpu.max_registers_per_thread) << name;
      EXPECT_LE(r.shared_bytes, hw.gpu.shared_memory_per_block) << name;
      if (name.find(anchor_kernel_tag) == std::string::npos) continue;
      const double estimate = double(gpu_register_estimate(*state, *task.anchor));
      const double ratio = estimate / double(r.registers);
      RecordProperty(std::string(spec) + "_registers_ptxas", r.registers);
      RecordProperty(std::string(spec) + "_registers_model", int(estimate));
      std::cout << op.name << " " << arch << " " << state->str() << ": ptxas " << r.registers << " registers, model "
                << estimate << " (" << ratio << "), nvrtc " << out.compile_ms << " ms\n";
      EXPECT_GT(ratio, 0.5) << name << ": model " << estimate << " registers, ptxas " << r.registers;
      EXPECT_LT(ratio, 2.0) << name << ": model " << estimate << " registers, ptxas " << r.registers;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, NvrtcKernels, ::testing::ValuesIn(benchmark_shapes()),
                         [](const auto& info) { return test::case_name(info.param); });

TEST(NvrtcKernels, PtxasReportParsing) {
  const std::string log =
      "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
      "ptxas info    : Used 12 registers\n";
  auto r = codegen::parse_ptxas_report(log);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["k1"].registers, 40);
  EXPECT_EQ(r["k1"].spill_bytes, 8);
  EXPECT_EQ(r["k1"].shared_bytes, 2048);
  EXPECT_EQ(r["k1"].stack_bytes, 8);
  EXPECT_EQ(r["k2"].registers, 12);
  EXPECT_EQ(r["k2"].spill_bytes, 0);
  EXPECT_USER_ERROR(codegen::sm_arch("nine"), "is not of the form MAJOR.MINOR");
  EXPECT_EQ(codegen::sm_arch("8.0"), "sm_80");
}

}  // namespace
}  // namespace loom
