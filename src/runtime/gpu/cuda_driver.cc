#include "runtime/gpu/cuda_driver.h"


#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "loom/error.h"
#include "support/dynamic_library.h"

namespace loom {

namespace {

// The part of the driver API loom uses (cuda.h), declared here: no header or library is needed to build.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*primary_retain)(Handle*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(Handle) = nullptr;
  CUresult (*module_load)(Handle*, const void*) = nullptr;
  CUresult (*module_function)(Handle*, Handle, const char*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*copy_in)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*copy_out)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle, void**,
                     void**) = nullptr;
  CUresult (*synchronize)() = nullptr;
  CUresult (*event_create)(Handle*, unsigned) = nullptr;
  CUresult (*event_record)(Handle, Handle) = nullptr;
  CUresult (*event_synchronize)(Handle) = nullptr;
  CUresult (*event_elapsed)(float*, Handle, Handle) = nullptr;
  CUresult (*event_destroy)(Handle) = nullptr;
  CUdevice device = 0;
  Handle context = nullptr;
  std::string name;
  std::string error;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.error = "no CUDA driver (libcuda.so.1)";
      return d;
    }
    bool ok = bind_symbol(lib, "cuInit", d.init) && bind_symbol(lib, "cuDeviceGet", d.device_get) &&
              bind_symbol(lib, "cuDeviceGetCount", d.device_count) && bind_symbol(lib, "cuDeviceGetName", d.device_name) &&
              bind_symbol(lib, "cuDeviceGetAttribute", d.device_attribute) &&
              bind_symbol(lib, "cuDevicePrimaryCtxRetain", d.primary_retain) &&
              bind_symbol(lib, "cuCtxSetCurrent", d.ctx_set_current) && bind_symbol(lib, "cuModuleLoadData", d.module_load) &&
              bind_symbol(lib, "cuModuleGetFunction", d.module_function) && bind_symbol(lib, "cuMemAlloc_v2", d.mem_alloc) &&
              bind_symbol(lib, "cuMemFree_v2", d.mem_free) && bind_symbol(lib, "cuMemcpyHtoD_v2", d.copy_in) &&
              bind_symbol(lib, "cuMemcpyDtoH_v2", d.copy_out) && bind_symbol(lib, "cuLaunchKernel", d.launch) &&
              bind_symbol(lib, "cuCtxSynchronize", d.synchronize) && bind_symbol(lib, "cuEventCreate", d.event_create) &&
              bind_symbol(lib, "cuEventRecord", d.event_record) && bind_symbol(lib, "cuEventSynchronize", d.event_synchronize) &&
              bind_symbol(lib, "cuEventElapsedTime", d.event_elapsed) && bind_symbol(lib, "cuEventDestroy_v2", d.event_destroy);
    int count = 0;
    if (!ok) d.error = "the CUDA driver lacks a function loom needs";
    else if (d.init(0) != 0) d.error = "cuInit failed (no usable NVIDIA driver)";
    else if (d.device_count(&count) != 0 || count == 0) d.error = "no CUDA device";
    else if (d.device_get(&d.device, 0) != 0 || d.primary_retain(&d.context, d.device) != 0)
      d.error = "the CUDA device cannot be opened";
    if (d.error.empty()) {
      char name[256] = {0};
      d.device_name(name, sizeof name - 1, d.device);
      d.name = name;
    }
    return d;
  }();
  return d;
}

void check(CUresult rc, const char* what) {
  if (rc != 0) throw UserError(std::string("CUDA: ") + what + " failed (CUresult " + std::to_string(rc) + ")");
}

const Driver& current() {
  const Driver& d = driver();
  LOOM_USER_CHECK(d.error.empty(), d.error);
  check(d.ctx_set_current(d.context), "cuCtxSetCurrent");
  return d;
}

// Releases every handle of `handles` that is set, when it goes out of scope.
template <class T, class Release>
struct ReleaseEach {
  std::vector<T>& handles;
  Release release;
  ~ReleaseEach() {
    for (T h : handles)
      if (h) release(h);
  }
};
template <class T, class Release>
ReleaseEach(std::vector<T>&, Release) -> ReleaseEach<T, Release>;

// Device time of one `enqueue` between its own two events, for each of `runs` runs queued back to back.
std::vector<double> per_run_ms(const Driver& d, const std::function<void()>& enqueue, int runs) {
  std::vector<Handle> events(size_t(runs) + 1, nullptr);
  ReleaseEach destroy{events, [&](Handle e) { d.event_destroy(e); }};
  for (Handle& e : events) check(d.event_create(&e, 0), "cuEventCreate");
  check(d.event_record(events[0], nullptr), "cuEventRecord");
  for (int i = 0; i < runs; ++i) {
    enqueue();
    check(d.event_record(events[size_t(i) + 1], nullptr), "cuEventRecord");
  }
  check(d.event_synchronize(events.back()), "cuEventSynchronize");
  std::vector<double> ms(size_t(runs), 0.0);
  for (int i = 0; i < runs; ++i) {
    float t = 0;
    check(d.event_elapsed(&t, events[size_t(i)], events[size_t(i) + 1]), "cuEventElapsedTime");
    ms[size_t(i)] = t;
  }
  return ms;
}

// Median device time of `enqueue` over `repeats` runs, after about 100 ms of warm-up runs: an idle GPU clocks
// down, and its first runs after a pause are timed at a fraction of its speed.
double events_ms(const Driver& d, const std::function<void()>& enqueue, int repeats) {
  constexpr double kWarmUpMs = 100;
  const std::vector<double> first = per_run_ms(d, enqueue, 1);
  const double warm_up_runs = std::clamp(kWarmUpMs / std::max(first[0], 1e-3), 1.0, 10000.0);
  for (int i = 0; i < int(warm_up_runs); ++i) enqueue();
  std::vector<double> ms = per_run_ms(d, enqueue, std::max(1, repeats));
  std::nth_element(ms.begin(), ms.begin() + ptrdiff_t(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

bool cuda_device_available(std::string* why) {
  if (why) *why = driver().error;
  return driver().error.empty();
}

std::string cuda_device_compute_capability() {
  const Driver& d = driver();
  LOOM_USER_CHECK(d.error.empty(), d.error);
  int major = 0, minor = 0;
  check(d.device_attribute(&major, 75, d.device), "cuDeviceGetAttribute");  // COMPUTE_CAPABILITY_MAJOR
  check(d.device_attribute(&minor, 76, d.device), "cuDeviceGetAttribute");  // COMPUTE_CAPABILITY_MINOR
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string run_cuda(const std::string& cubin, const GpuCall& call, int repeats, double* kernel_ms) {
  static std::mutex mutex;
  static std::map<std::string, Handle> modules;
  std::lock_guard<std::mutex> lock(mutex);
  const Driver& d = current();
  Handle& module = modules[cubin];
  if (!module) check(d.module_load(&module, cubin.data()), "cuModuleLoadData");
  std::vector<CUdeviceptr> device(call.buffers.size(), 0);
  ReleaseEach release{device, [&](CUdeviceptr p) { d.mem_free(p); }};
  for (size_t i = 0; i < call.buffers.size(); ++i) {
    const GpuCallBuffer& b = call.buffers[i];
    check(d.mem_alloc(&device[i], b.bytes ? b.bytes : 4), "cuMemAlloc");
    if (b.host && b.bytes) check(d.copy_in(device[i], b.host, b.bytes), "cuMemcpyHtoD");
  }
  std::vector<int64_t> sizes = call.sizes;
  std::vector<void*> params;
  for (CUdeviceptr& p : device) params.push_back(&p);
  for (int64_t& s : sizes) params.push_back(&s);
  std::vector<std::pair<Handle, const GpuCallLaunch*>> launches;
  for (const GpuCallLaunch& l : call.launches) {
    if (l.grid == 0) continue;
    LOOM_USER_CHECK(l.grid <= 0x7fffffffULL, "CUDA: grid of ", l.grid, " blocks exceeds the limit");
    Handle fn = nullptr;
    check(d.module_function(&fn, module, l.kernel.c_str()), "cuModuleGetFunction");
    launches.emplace_back(fn, &l);
  }
  auto enqueue = [&] {
    for (const auto& [fn, l] : launches)
      check(d.launch(fn, unsigned(l->grid), 1, 1, l->threads, 1, 1, 0, nullptr, params.data(), nullptr),
            "cuLaunchKernel");
  };
  enqueue();
  check(d.synchronize(), "cuCtxSynchronize");
  if (kernel_ms) *kernel_ms = events_ms(d, enqueue, repeats);
  for (size_t i = 0; i < call.buffers.size(); ++i) {
    const GpuCallBuffer& b = call.buffers[i];
    if (b.download && b.bytes) check(d.copy_out(b.host, device[i], b.bytes), "cuMemcpyDtoH");
  }
  return d.name;
}

unsigned long long cuda_alloc(size_t bytes) {
  const Driver& d = current();
  CUdeviceptr p = 0;
  check(d.mem_alloc(&p, bytes ? bytes : 4), "cuMemAlloc");
  return p;
}

void cuda_free(unsigned long long ptr) {
  if (ptr) driver().mem_free(ptr);
}

double cuda_time_ms(const std::function<void()>& enqueue, int repeats) {
  const Driver& d = current();
  enqueue();
  check(d.synchronize(), "cuCtxSynchronize");
  return events_ms(d, enqueue, repeats);
}

}  // namespace loom
