// Where a driver is installed, NVRTC 12.9 and later serve a program compiled
// before from a cache, and ptxas reports nothing for it: a compile that asks
// for the report must still carry it (the CLI's resource report, the
// gpu_check tier's spill checks and the GPU benchmark's register counts read
// it). Without a device the cache is off and this checks nothing new.
#include <gtest/gtest.h>

#include "codegen/gpu/nvrtc.h"
#include "runtime/gpu/cuda_driver.h"

namespace loom {
namespace {

TEST(NvrtcReport, ACompileAskingForTheReportCarriesItWhenTheSameSourceWasCompiledBefore) {
  std::string why;
  if (!codegen::nvrtc_available(&why) || !cuda_device_available(&why)) GTEST_SKIP() << why;
  const std::string source = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  for (int i = 0; i < 2; ++i) codegen::nvrtc_compile(source, "twice", "sm_90");
  const codegen::NvrtcOutput out = codegen::nvrtc_compile(source, "twice", "sm_90", /*need_report=*/true);
  ASSERT_EQ(out.kernels.count("twice"), 1u) << out.log;
  EXPECT_GT(out.kernels.at("twice").registers, 0) << out.log;
}

}  // namespace
}  // namespace loom
