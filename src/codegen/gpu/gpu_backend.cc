// The GPU backend: a lowered GPU function becomes a GpuModule (CUDA C and
// OpenCL C of its kernels, and its host program). A call runs it through the
// CUDA driver when a device is present (the CUDA C compiled by NVRTC for the
// device, once), otherwise through OpenCL (PoCL on the CPU): the same
// kernels in their OpenCL twin, so that every GPU kernel can be checked on
// a machine without a GPU.
#include <mutex>

#include "codegen/backend.h"
#include "codegen/gpu/gpu_module.h"
#include "codegen/gpu/gpu_source.h"
#include "codegen/gpu/nvrtc.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/opencl_runner.h"
#include "loom/error.h"
#include "support/checked.h"

namespace loom::codegen {

namespace {

class GpuFunction : public CompiledFunction {
 public:
  explicit GpuFunction(GpuModule m) : module_(std::move(m)) {}

  void call(void* const* buffers, const int64_t* sizes) const override {
    GpuCall call = make_call(buffers, sizes);
    std::string device;
    if (cuda_device_available()) {
      device = "cuda";
      run_cuda(cubin(), call);
    } else {
      device = run_checked_opencl(std::move(call));
      device = device.rfind("cpu", 0) == 0 ? "opencl-cpu" : "opencl-gpu";
    }
    std::lock_guard<std::mutex> lock(mutex_);
    executed_on_ = device;
  }

  double time_on_device(void* const* buffers, const int64_t* sizes, int repeats) const override {
    std::string why;
    LOOM_USER_CHECK(cuda_device_available(&why), "timing on a GPU needs a CUDA device: ", why);
    double ms = 0;
    run_cuda(cubin(), make_call(buffers, sizes), repeats, &ms);
    return ms;
  }

  std::string ir() const override { return module_.cuda_source; }

  std::string executed_on() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return executed_on_;
  }

  std::string source(bool opencl) const override { return opencl ? module_.opencl_source : module_.cuda_source; }

 private:
  GpuCall make_call(void* const* buffers, const int64_t* sizes) const {
    GpuCall call;
    call.sizes.assign(sizes, sizes + module_.num_sizes);
    size_t arg = 0;
    for (const GpuBufferPlan& b : module_.buffers) {
      GpuCallBuffer cb;
      const int64_t elements = b.elements.eval(sizes);
      cb.bytes = uint64_t(checked_mul(elements, int64_t(b.element_bytes), "GPU buffer size"));
      if (b.is_arg) {
        cb.host = buffers[arg++];
        cb.download = b.written;
      }
      call.buffers.push_back(cb);
    }
    for (const GpuLaunchPlan& l : module_.launches)
      call.launches.push_back({l.kernel, uint64_t(l.grid.eval(sizes)), uint32_t(l.threads)});
    return call;
  }

  // The OpenCL twin, with its fault flag as the last buffer: a kernel that reached outside a buffer is loom's
  // bug, reported as such rather than returned as results.
  std::string run_checked_opencl(GpuCall call) const {
    int32_t fault = 0;
    call.buffers.push_back({&fault, sizeof fault, true});
    std::string device = run_opencl(module_.opencl_source, call);
    LOOM_INTERNAL_CHECK(fault == 0, "GPU function ", module_.name, ": a kernel accessed ",
                        gpu_fault_buffer(module_.opencl_source, fault), " outside its bounds");
    return device;
  }

  // Built for the device present, on first use.
  const std::string& cubin() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cubin_.empty()) {
      const std::string arch = sm_arch(cuda_device_compute_capability());
      cubin_ = nvrtc_compile(module_.cuda_source, module_.name, arch).cubin;
    }
    return cubin_;
  }

  GpuModule module_;
  mutable std::mutex mutex_;
  mutable std::string cubin_;
  mutable std::string executed_on_;
};

class GpuBackend : public Backend {
 public:
  explicit GpuBackend(const GpuSpec& gpu) : gpu_(gpu) {}

  CodeObject compile_object(const LoweredFunc& func, bool with_ir) override {
    GpuModule m = GpuModule::from(func);
    return {m.name, m.serialize(), with_ir ? m.cuda_source : ""};
  }

  std::unique_ptr<CompiledFunction> load(const CodeObject& object) override {
    return std::make_unique<GpuFunction>(GpuModule::parse(object.bytes));
  }

  std::string identity() override { return "gpu-source 1 cc " + gpu_.compute_capability; }

 private:
  GpuSpec gpu_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const GpuSpec& gpu) { return std::make_unique<GpuBackend>(gpu); }

}  // namespace loom::codegen
