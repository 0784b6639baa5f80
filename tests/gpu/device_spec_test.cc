// Checks the bundled GPU hwspec for the present device against what the CUDA
// driver reports. The driver library is opened at run time, so the test
// builds everywhere and skips itself where no driver or device exists.
#include <cuda.h>
#include <dlfcn.h>

#include "test_util.h"

namespace loom {
namespace {

struct Driver {
  decltype(&cuInit) init = nullptr;
  decltype(&cuDeviceGetCount) count = nullptr;
  decltype(&cuDeviceGet) get = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;

  bool open() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    init = reinterpret_cast<decltype(init)>(dlsym(lib, "cuInit"));
    count = reinterpret_cast<decltype(count)>(dlsym(lib, "cuDeviceGetCount"));
    get = reinterpret_cast<decltype(get)>(dlsym(lib, "cuDeviceGet"));
    attribute = reinterpret_cast<decltype(attribute)>(dlsym(lib, "cuDeviceGetAttribute"));
    return init && count && get && attribute;
  }
};

Driver driver;

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  EXPECT_EQ(driver.attribute(&v, a, dev), CUDA_SUCCESS);
  return v;
}

TEST(GpuDevice, BundledSpecMatchesTheDevice) {
  int count = 0;
  if (!driver.open()) GTEST_SKIP() << "no CUDA driver (libcuda.so.1)";
  if (driver.init(0) != CUDA_SUCCESS || driver.count(&count) != CUDA_SUCCESS || count == 0)
    GTEST_SKIP() << "no CUDA device";
  CUdevice dev;
  ASSERT_EQ(driver.get(&dev, 0), CUDA_SUCCESS);
  std::string cc = std::to_string(attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) + "." +
                   std::to_string(attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  const HwSpec* match = nullptr;
  std::vector<HwSpec> specs;
  for (const auto& name : bundled_hwspec_names()) specs.push_back(load_hwspec(name));
  for (const auto& s : specs)
    if (s.kind == TargetKind::Gpu && s.gpu.compute_capability == cc) match = &s;
  if (!match) GTEST_SKIP() << "no bundled spec for compute capability " << cc;
  const GpuSpec& g = match->gpu;
  EXPECT_EQ(g.warp_size, attribute(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  EXPECT_EQ(g.max_threads_per_block, attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  EXPECT_EQ(g.max_threads_per_sm, attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
  EXPECT_EQ(g.registers_per_sm, attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR));
  EXPECT_EQ(g.shared_memory_per_block, attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  EXPECT_EQ(g.shared_memory_per_sm, attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  // SM count and L2 differ between board variants (SXM / PCIe): report only.
  std::cout << match->name << ": spec " << g.sms << " SMs, device "
            << attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) << "\n";
}

}  // namespace
}  // namespace loom
