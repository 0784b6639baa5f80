// The GPU backend on the Roller/Gensor benchmark shapes (fp32).
//
// Everywhere: per shape and strategy (construct top-1, roller top-1), the
// construction time, NVRTC's compile time, ptxas's registers and spills for
// the anchor kernel beside the model's register estimate (and how many are
// within 25%). Where a CUDA device exists: each kernel's median device time
// (an event pair per run, after a warm-up; no copies), beside cuBLAS SGEMM for
// the matrix products and cuDNN (implicit-precomp GEMM, NHWC) for the
// convolutions, both opened at run time.
//
//   loom_bench_gpu [--hwspec=h100] [--repeats=50] [--json=FILE]

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "codegen/gpu/nvrtc.h"
#include "construct/construct.h"
#include "construct/roller.h"
#include "driver/compile_schedule.h"
#include "loom/loom.h"
#include "runtime/gpu/cuda_driver.h"
#include "schedule/schedule.h"
#include "schedule/step.h"
#include "schedule/task.h"
#include "support/dynamic_library.h"

namespace {

using Params = std::map<std::string, std::string>;
struct Shape {
  std::string op;
  Params params;
};

std::vector<Shape> shapes() {
  auto gmm = [](int m, int n, int k) {
    return Shape{"matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}}};
  };
  auto c2d = [](int h, int ci, int co, int k, int s, int p) {
    return Shape{"conv2d", {{"N", "1"}, {"H", std::to_string(h)}, {"W", std::to_string(h)}, {"CI", std::to_string(ci)},
                            {"CO", std::to_string(co)}, {"KH", std::to_string(k)}, {"KW", std::to_string(k)},
                            {"stride", std::to_string(s)}, {"pad", std::to_string(p)}}};
  };
  return {gmm(128, 128, 128), gmm(512, 32, 512), gmm(512, 512, 512), gmm(1024, 1024, 1024), gmm(4096, 4096, 4096),
          c2d(224, 3, 64, 7, 2, 3), c2d(56, 64, 64, 1, 1, 0), c2d(14, 256, 256, 3, 1, 1), c2d(7, 512, 512, 3, 1, 1)};
}

// cuBLAS and cuDNN, the parts used, opened at run time.
struct Vendor {
  void* cublas = nullptr;
  void* cudnn = nullptr;
  int (*cublas_create)(void**) = nullptr;
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;
  int (*cudnn_create)(void**) = nullptr;
  int (*tensor_create)(void**) = nullptr;
  int (*tensor_set)(void*, int, int, int, int, int, int) = nullptr;
  int (*filter_create)(void**) = nullptr;
  int (*filter_set)(void*, int, int, int, int, int, int) = nullptr;
  int (*conv_create)(void**) = nullptr;
  int (*conv_set)(void*, int, int, int, int, int, int, int, int) = nullptr;
  int (*workspace)(void*, void*, void*, void*, void*, int, size_t*) = nullptr;
  int (*forward)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*, size_t, const void*,
                 void*, void*) = nullptr;
  void* blas_handle = nullptr;
  void* dnn_handle = nullptr;

  void open() {
    using loom::bind_symbol;
    cublas = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!cublas) cublas = dlopen("/usr/local/cuda/lib64/libcublas.so", RTLD_NOW | RTLD_LOCAL);
    cudnn = dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL);
    if (!cudnn) cudnn = dlopen("/usr/local/cuda/lib64/libcudnn.so", RTLD_NOW | RTLD_LOCAL);
    bind_symbol(cublas, "cublasCreate_v2", cublas_create);
    bind_symbol(cublas, "cublasSgemm_v2", sgemm);
    bind_symbol(cudnn, "cudnnCreate", cudnn_create);
    bind_symbol(cudnn, "cudnnCreateTensorDescriptor", tensor_create);
    bind_symbol(cudnn, "cudnnSetTensor4dDescriptor", tensor_set);
    bind_symbol(cudnn, "cudnnCreateFilterDescriptor", filter_create);
    bind_symbol(cudnn, "cudnnSetFilter4dDescriptor", filter_set);
    bind_symbol(cudnn, "cudnnCreateConvolutionDescriptor", conv_create);
    bind_symbol(cudnn, "cudnnSetConvolution2dDescriptor", conv_set);
    bind_symbol(cudnn, "cudnnGetConvolutionForwardWorkspaceSize", workspace);
    bind_symbol(cudnn, "cudnnConvolutionForward", forward);
    if (cublas_create && cublas_create(&blas_handle) != 0) blas_handle = nullptr;
    if (cudnn_create && cudnn_create(&dnn_handle) != 0) dnn_handle = nullptr;
  }

  // Row-major C[M,N] = A[M,K] B[K,N] as column-major C^T = B^T A^T.
  double sgemm_ms(int m, int n, int k, int repeats) const {
    if (!blas_handle || !sgemm) return -1;
    auto a = loom::cuda_alloc(size_t(m) * k * 4), b = loom::cuda_alloc(size_t(k) * n * 4),
         c = loom::cuda_alloc(size_t(m) * n * 4);
    const float one = 1, zero = 0;
    double ms = loom::cuda_time_ms([&] {
      sgemm(blas_handle, 0, 0, n, m, k, &one, reinterpret_cast<const float*>(b), n, reinterpret_cast<const float*>(a),
            k, &zero, reinterpret_cast<float*>(c), n);
    }, repeats);
    for (auto p : {a, b, c}) loom::cuda_free(p);
    return ms;
  }

  // NHWC fp32 forward convolution, implicit-precomp GEMM.
  double conv_ms(const Params& p, int repeats) const {
    if (!dnn_handle || !forward) return -1;
    auto v = [&](const char* k) { return std::stoi(p.at(k)); };
    const int n = v("N"), h = v("H"), w = v("W"), ci = v("CI"), co = v("CO"), kh = v("KH"), kw = v("KW");
    const int s = v("stride"), pad = v("pad");
    const int oh = (h + 2 * pad - kh) / s + 1, ow = (w + 2 * pad - kw) / s + 1;
    void *x_desc, *y_desc, *w_desc, *c_desc;
    tensor_create(&x_desc);
    tensor_create(&y_desc);
    filter_create(&w_desc);
    conv_create(&c_desc);
    const int kNhwc = 1, kFloat = 0, kCrossCorrelation = 1, kImplicitPrecompGemm = 1;
    tensor_set(x_desc, kNhwc, kFloat, n, ci, h, w);
    tensor_set(y_desc, kNhwc, kFloat, n, co, oh, ow);
    filter_set(w_desc, kFloat, kNhwc, co, ci, kh, kw);
    conv_set(c_desc, pad, pad, s, s, 1, 1, kCrossCorrelation, kFloat);
    size_t ws = 0;
    workspace(dnn_handle, x_desc, w_desc, c_desc, y_desc, kImplicitPrecompGemm, &ws);
    auto x = loom::cuda_alloc(size_t(n) * h * w * ci * 4), wt = loom::cuda_alloc(size_t(kh) * kw * ci * co * 4),
         y = loom::cuda_alloc(size_t(n) * oh * ow * co * 4), space = loom::cuda_alloc(ws);
    const float one = 1, zero = 0;
    double ms = loom::cuda_time_ms([&] {
      forward(dnn_handle, &one, x_desc, reinterpret_cast<void*>(x), w_desc, reinterpret_cast<void*>(wt), c_desc,
              kImplicitPrecompGemm, reinterpret_cast<void*>(space), ws, &zero, y_desc, reinterpret_cast<void*>(y));
    }, repeats);
    for (auto q : {x, wt, y, space}) loom::cuda_free(q);
    return ms;
  }
};

struct Row {
  std::string shape, strategy, state;
  double construct_ms = 0, nvrtc_ms = 0;
  int registers = 0, model_registers = 0;
  int64_t spill_bytes = 0;
  double device_ms = -1, vendor_ms = -1, gflops = 0;
};

std::string shape_name(const Shape& s) {
  std::string n = s.op;
  for (const auto& [k, v] : s.params) n += " " + k + "=" + v;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "h100", json_path;
  int repeats = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--hwspec=", 0) == 0) spec = a.substr(9);
    else if (a.rfind("--repeats=", 0) == 0) repeats = std::stoi(a.substr(10));
    else if (a.rfind("--json=", 0) == 0) json_path = a.substr(7);
    else {
      std::fprintf(stderr, "usage: loom_bench_gpu [--hwspec=h100] [--repeats=N] [--json=FILE]\n");
      return 2;
    }
  }
  const loom::HwSpec hw = loom::load_hwspec(spec);
  std::string why;
  const bool device = loom::cuda_device_available(&why);
  const bool nvrtc = loom::codegen::nvrtc_available();
  std::printf("hwspec %s (%s); device: %s; nvrtc: %s\n", hw.name.c_str(), hw.gpu.compute_capability.c_str(),
              device ? "CUDA" : why.c_str(), nvrtc ? "yes" : "no");
  Vendor vendor;
  if (device) vendor.open();
  std::vector<Row> rows;
  int within = 0, counted = 0;
  double construct_total = 0;
  for (const Shape& shape : shapes()) {
    loom::Operator op = loom::make_operator(shape.op, shape.params);
    loom::Task task = loom::make_task(op, hw, 1);
    const double flops = double(*op.flops.as_const_int());
    double vendor_ms = -1;
    if (device) {
      auto v = [&](const char* k) { return std::stoi(shape.params.at(k)); };
      vendor_ms = shape.op == "matmul" ? vendor.sgemm_ms(v("M"), v("N"), v("K"), repeats)
                                       : vendor.conv_ms(shape.params, repeats);
    }
    for (const char* strategy : {"construct", "roller"}) {
      Row row;
      row.shape = shape_name(shape);
      row.strategy = strategy;
      auto t0 = std::chrono::steady_clock::now();
      loom::State state = std::string(strategy) == "construct"
                              ? loom::construct_states(task, 1, {}).front().state
                              : loom::roller_states(*task.anchor, hw, 1, 1).front();
      row.construct_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (row.strategy == "construct") construct_total += row.construct_ms;
      row.state = state->str();
      row.model_registers = int(loom::gpu_register_estimate(*state, *task.anchor));
      loom::Kernel k = loom::compile_schedule(op, loom::schedule_with_state(task, state), hw, 1);
      if (nvrtc) {
        const std::string arch = loom::codegen::sm_arch(hw.gpu.compute_capability);
        auto out = loom::codegen::nvrtc_compile(k.source(), op.name, arch, /*need_report=*/true);
        row.nvrtc_ms = out.compile_ms;
        for (const auto& [name, r] : out.kernels) {
          row.spill_bytes += r.spill_bytes;
          if (name.find("_" + task.anchor->stage.name() + "_") != std::string::npos) row.registers = r.registers;
        }
        if (row.registers > 0) {
          ++counted;
          within += std::abs(double(row.model_registers) / row.registers - 1) <= 0.25;
        }
      }
      if (device) {
        auto inputs = loom::random_inputs(op, 1);
        auto outputs = loom::allocate_outputs(op, inputs);
        row.device_ms = loom::device_kernel_ms(k, inputs, outputs, repeats);
        row.gflops = flops / (row.device_ms * 1e6);
        row.vendor_ms = vendor_ms;
      }
      std::printf("%-62s %-9s build %6.2f ms  nvrtc %6.1f ms  regs %3d (model %3d)  spills %lld", row.shape.c_str(),
                  strategy, row.construct_ms, row.nvrtc_ms, row.registers, row.model_registers,
                  static_cast<long long>(row.spill_bytes));
      if (device)
        std::printf("  %.4f ms  %.0f GFLOP/s  vendor %.4f ms (%.2fx)", row.device_ms, row.gflops, row.vendor_ms,
                    row.vendor_ms > 0 ? row.vendor_ms / row.device_ms : 0.0);
      std::printf("\n    %s\n", row.state.c_str());
      rows.push_back(row);
    }
  }
  std::printf("construct mean %.2f ms per operator; register estimate within 25%% of ptxas: %d of %d kernels\n",
              construct_total / double(shapes().size()), within, counted);
  if (!json_path.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows)
      j.push_back({{"shape", r.shape}, {"strategy", r.strategy}, {"state", r.state}, {"construct_ms", r.construct_ms},
                   {"nvrtc_ms", r.nvrtc_ms}, {"registers", r.registers}, {"model_registers", r.model_registers},
                   {"spill_bytes", r.spill_bytes}, {"device_ms", r.device_ms}, {"vendor_ms", r.vendor_ms},
                   {"gflops", r.gflops}});
    std::ofstream(json_path) << j.dump(1) << "\n";
  }
  return 0;
}
