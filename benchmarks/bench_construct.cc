// loom's construction strategies beside oneDNN (and OpenBLAS for GEMM).
//
//   loom_bench [--suite=gmm,skinny,odd,c2d,incep,dep,mbv2,nrm,row,resnet,bert,fused|all] [--threads=1,all]
//              [--csv=FILE] [--json=FILE] [--budget-ms=N] [--hwspec=NAME|FILE]
//
// For each thread configuration (1 = pinned to CPU 0; all = every core) and
// each workload it compiles the operator with construct top-1, construct
// top-10, roller top-1 and roller top-10, checks every kernel against the
// reference executor, then times all methods in the same process (round-
// robin on one thread, in blocks on several) and reports medians. Fused
// rows compare one fused kernel with the same operators run one by one.
//
// Baselines: oneDNN (convolutions in the layout oneDNN prefers, a blocked
// one, so its column is its best), then a second one: OpenBLAS for GEMM,
// oneDNN on NHWC activations for convolutions. "roof" is construct top-1's
// fraction of the host's own measured limit: flops over the measured peak,
// or compulsory bytes (inputs and outputs once) over the measured bandwidth
// of the level they fit in, whichever is larger. Construction time ("cons")
// is the median of three: the compile's own and two more runs of the
// strategy (on a shared core, a single run read up to 1.8x the median).
// --hwspec builds loom's kernels for another spec of this machine (host256:
// restricted to AVX2, bench_specs.h) and takes the roof from it; oneDNN is
// kept to AVX2 alike where the spec has no AVX-512 (OpenBLAS is not: set
// OPENBLAS_CORETYPE=Haswell for that).
// A workload that fails to compile is reported on its own line (FAILED, and
// "error" in the JSON) and the rest still run; the exit status is 1 when any
// workload failed or gave a wrong result. Each JSON row names its operator
// and parameters ("op", "params"): a shape file for loom_bench_picks is
//   python3 -c 'import json; [print(r["op"], *(k + "=" + v for k, v in r["params"].items()))
//     for r in json.load(open("bench_construct.json")) if r["threads"] == 1]'
#include <sched.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "driver/compile_schedule.h"
#include "driver/target.h"
#include "loom/loom.h"
#include "schedule/task.h"
#include "bench_specs.h"
#include "bench_util.h"
#include "onednn_baselines.h"

namespace {

using Params = std::map<std::string, std::string>;

struct Part {
  std::string op;
  Params params;
};

struct Workload {
  std::string suite, name;
  Part op;
  std::function<std::vector<bench::Baseline>()> baselines;
  std::vector<Part> unfused;  // non-empty: a fused row
};

Params P(std::initializer_list<std::pair<const std::string, std::string>> kv) { return Params(kv); }
std::string S(int64_t v) { return std::to_string(v); }

loom::ops::Conv2dParams conv_params(int64_t N, int64_t H, int64_t W, int64_t CI, int64_t CO, int64_t k,
                                    int64_t stride, int64_t pad, int64_t groups = 1) {
  loom::ops::Conv2dParams p;
  p.N = N; p.H = H; p.W = W; p.CI = CI; p.CO = CO; p.KH = p.KW = k; p.stride = stride; p.pad = pad; p.groups = groups;
  return p;
}

// oneDNN in its preferred (blocked) layout first, then on NHWC.
std::function<std::vector<bench::Baseline>()> conv_baselines(const loom::ops::Conv2dParams& p) {
  return [p] { return std::vector<bench::Baseline>{bench::onednn_conv(p, false, true), bench::onednn_conv(p, false)}; };
}

Workload conv_workload(const std::string& suite, int64_t N, int64_t H, int64_t W, int64_t CI, int64_t CO, int64_t k,
                       int64_t stride, int64_t pad) {
  std::string name = "conv " + S(H) + "x" + S(W) + " " + S(CI) + "->" + S(CO) + " k" + S(k) + "/" + S(stride);
  return {suite, name,
          {"conv2d", P({{"N", S(N)}, {"H", S(H)}, {"W", S(W)}, {"CI", S(CI)}, {"CO", S(CO)}, {"KH", S(k)},
                        {"KW", S(k)}, {"stride", S(stride)}, {"pad", S(pad)}})},
          conv_baselines(conv_params(N, H, W, CI, CO, k, stride, pad)),
          {}};
}

Workload depthwise_workload(const std::string& suite, int64_t H, int64_t C, int64_t k, int64_t stride) {
  const int64_t pad = k / 2;
  return {suite, "depthwise " + S(H) + "x" + S(H) + " c" + S(C) + " k" + S(k) + "/" + S(stride),
          {"depthwise_conv2d", P({{"N", "1"}, {"H", S(H)}, {"W", S(H)}, {"C", S(C)}, {"KH", S(k)}, {"KW", S(k)},
                                  {"stride", S(stride)}, {"pad", S(pad)}})},
          conv_baselines(conv_params(1, H, H, C, C, k, stride, pad, C)),
          {}};
}

Workload gemm_workload(const std::string& suite, int M, int N, int K) {
  return {suite, "matmul " + S(M) + "x" + S(N) + "x" + S(K), {"matmul", P({{"M", S(M)}, {"N", S(N)}, {"K", S(K)}})},
          [=] { return std::vector<bench::Baseline>{bench::onednn_gemm(M, N, K, false), bench::openblas_gemm(M, N, K, false)}; },
          {}};
}

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{128, 128, 128}, {512, 32, 512}, {512, 512, 512}, {1024, 1024, 1024}})
    w.push_back(gemm_workload("gmm", M, N, K));
  // Skinny and odd GEMMs: GEMV (M = 1), M below a register block, odd N and K.
  for (int M : {1, 7, 37})
    for (int N : {771, 1000, 4096})
      for (int K : {771, 1000, 4096}) w.push_back(gemm_workload("skinny", M, N, K));
  // Prime and odd extents: columns and channels a vector does not divide (127, 255, 65, 93), reductions whose
  // lengths have few divisors (1023, 1543, 257), odd windows and strides.
  for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{
           {127, 127, 1023}, {255, 255, 255}, {61, 383, 1543}, {97, 97, 97}, {5, 1021, 1021}, {17, 4099, 331}})
    w.push_back(gemm_workload("odd", M, N, K));
  for (auto [H, CI, CO, k, s] : std::vector<std::tuple<int, int, int, int, int>>{
           {30, 33, 65, 5, 2}, {23, 257, 127, 3, 1}, {31, 29, 61, 3, 2}, {19, 47, 93, 1, 1}, {13, 67, 131, 3, 1}})
    w.push_back(conv_workload("odd", 1, H, H, CI, CO, k, s, k / 2));
  for (auto [H, C, k, s] : std::vector<std::tuple<int, int, int, int>>{{29, 97, 3, 1}, {13, 131, 5, 2}, {57, 37, 3, 1}})
    w.push_back(depthwise_workload("odd", H, C, k, s));
  w.push_back(conv_workload("c2d", 1, 224, 224, 3, 64, 7, 2, 3));
  w.push_back(conv_workload("c2d", 1, 56, 56, 64, 64, 1, 1, 0));
  w.push_back(conv_workload("c2d", 1, 14, 14, 256, 256, 3, 1, 1));
  w.push_back(conv_workload("c2d", 1, 7, 7, 512, 512, 3, 1, 1));
  // Inception-style 3x3 convolutions at small spatial sizes with many channels.
  w.push_back(conv_workload("incep", 1, 35, 35, 96, 96, 3, 1, 1));
  w.push_back(conv_workload("incep", 1, 35, 35, 64, 96, 3, 1, 1));
  w.push_back(conv_workload("incep", 1, 17, 17, 192, 224, 3, 1, 1));
  w.push_back(conv_workload("incep", 1, 17, 17, 768, 192, 1, 1, 0));
  w.push_back(conv_workload("incep", 1, 8, 8, 448, 384, 3, 1, 1));
  for (auto [H, C, s] : std::vector<std::tuple<int, int, int>>{{112, 32, 1}, {112, 64, 2}, {14, 512, 2}, {7, 1024, 1}})
    w.push_back(depthwise_workload("dep", H, C, 3, s));
  w.push_back(depthwise_workload("dep", 75, 88, 5, 2));  // large kernel and stride
  // MobileNetV2's depthwise 3x3 layers.
  for (auto [H, C, s] : std::vector<std::tuple<int, int, int>>{{112, 32, 1}, {56, 144, 1}, {28, 192, 1}, {14, 384, 1},
                                                               {14, 576, 1}, {7, 960, 1}, {112, 96, 2}, {56, 144, 2},
                                                               {28, 192, 2}, {14, 576, 2}})
    w.push_back(depthwise_workload("mbv2", H, C, 3, s));
  // Row operators at BERT-base shapes: softmax over [192 T, T], layernorm over [16 T, 768].
  for (int T : {43, 128}) {
    w.push_back({"row", "softmax " + S(192 * T) + "x" + S(T), {"softmax", P({{"M", S(192 * T)}, {"N", S(T)}})},
                 [=] { return std::vector<bench::Baseline>{bench::onednn_softmax(192 * T, T)}; }, {}});
    w.push_back({"row", "layernorm " + S(16 * T) + "x768", {"layernorm", P({{"M", S(16 * T)}, {"N", "768"}})},
                 [=] { return std::vector<bench::Baseline>{bench::onednn_layernorm(16 * T, 768)}; }, {}});
  }
  w.push_back({"row", "softmax 1536x128", {"softmax", P({{"M", "1536"}, {"N", "128"}})},
               [] { return std::vector<bench::Baseline>{bench::onednn_softmax(1536, 128)}; }, {}});
  // NRM (B, M, N): sqrt of the sum of squares of each batch's M x N matrix,
  // i.e. an l2 reduction over M*N contiguous elements.
  for (auto [M, N] : std::vector<std::pair<int, int>>{{256, 256}, {512, 512}, {1024, 1024}, {4096, 1024}})
    w.push_back({"nrm", "l2 norm " + S(M) + "x" + S(N), {"reduce", P({{"M", "1"}, {"N", S(int64_t(M) * N)}, {"kind", "l2"}})},
                 [=] {
                   return std::vector<bench::Baseline>{bench::onednn_l2_norm(1, int64_t(M) * N),
                                                       bench::openblas_l2_norm(1, int64_t(M) * N)};
                 },
                 {}});
  w.push_back(conv_workload("resnet", 1, 224, 224, 3, 64, 7, 2, 3));
  for (auto [H, CI, CO, k] : std::vector<std::tuple<int, int, int, int>>{
           {56, 64, 64, 1}, {56, 64, 64, 3}, {56, 64, 256, 1}, {56, 256, 64, 1}, {28, 128, 128, 3}, {28, 128, 512, 1},
           {28, 512, 128, 1}, {14, 256, 256, 3}, {14, 256, 1024, 1}, {14, 1024, 256, 1}, {7, 512, 512, 3},
           {7, 512, 2048, 1}, {7, 2048, 512, 1}})
    w.push_back(conv_workload("resnet", 1, H, H, CI, CO, k, 1, k / 2));
  for (int T : {5, 43, 128})
    for (auto [K, N] : std::vector<std::pair<int, int>>{{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}}) {
      int M = 16 * T;
      w.push_back({"bert", "dense T=" + S(T) + " " + S(M) + "x" + S(N) + "x" + S(K),
                   {"dense", P({{"M", S(M)}, {"N", S(N)}, {"K", S(K)}})},
                   [=] {
                     return std::vector<bench::Baseline>{bench::onednn_gemm(M, N, K, true),
                                                         bench::onednn_dense(M, N, K, loom::ops::Epilogue::None)};
                   },
                   {}});
    }
  for (int T : {43, 128}) {
    int M = 16 * T;
    w.push_back({"fused", "dense+bias+gelu " + S(M) + "x3072x768",
                 {"dense", P({{"M", S(M)}, {"N", "3072"}, {"K", "768"}, {"epilogue", "bias_gelu"}})},
                 [=] {
                   using loom::ops::Epilogue;
                   return std::vector<bench::Baseline>{bench::onednn_dense(M, 3072, 768, Epilogue::BiasGelu)};
                 },
                 {{"dense", P({{"M", S(M)}, {"N", "3072"}, {"K", "768"}})}, {"bias_add_gelu", P({{"M", S(M)}, {"N", "3072"}})}}});
  }
  for (auto [H, CI, CO, k, s, pad] : std::vector<std::tuple<int, int, int, int, int, int>>{
           {224, 3, 64, 7, 2, 3}, {56, 64, 128, 3, 2, 1}, {28, 128, 256, 1, 2, 0}, {7, 512, 512, 3, 1, 1}}) {
    int OH = (H + 2 * pad - k) / s + 1;
    Params conv = P({{"N", "1"}, {"H", S(H)}, {"W", S(H)}, {"CI", S(CI)}, {"CO", S(CO)}, {"KH", S(k)}, {"KW", S(k)},
                     {"stride", S(s)}, {"pad", S(pad)}});
    Params fused = conv;
    fused["epilogue"] = "bn_relu";
    loom::ops::Conv2dParams p;
    p.N = 1; p.H = p.W = H; p.CI = CI; p.CO = CO; p.KH = p.KW = k; p.stride = s; p.pad = pad;
    w.push_back({"fused", "conv+bn+relu " + S(H) + " " + S(CI) + "->" + S(CO) + " k" + S(k) + "/" + S(s),
                 {"conv2d", fused}, [p] { return std::vector<bench::Baseline>{bench::onednn_conv(p, true)}; },
                 {{"conv2d", conv}, {"channel_affine_relu", P({{"N", "1"}, {"H", S(OH)}, {"W", S(OH)}, {"C", S(CO)}})}}});
  }
  return w;
}

// The host's own limit for `op` in ms: flops over the measured peak, or the
// compulsory bytes (every input and output once) over the measured read
// bandwidth of the innermost level they fit in, whichever is larger.
double roof_ms(const loom::Operator& op, const loom::HwSpec& hw, int threads) {
  const loom::CpuSpec& c = hw.cpu;
  double bytes = 0;
  for (const auto* list : {&op.inputs, &op.outputs})
    for (const auto& t : *list) {
      double n = 4;
      for (const auto& d : t.shape()) n *= double(*d.as_const_int());
      bytes += n;
    }
  double bandwidth = c.dram_core_bandwidth_gbs;
  for (const loom::CacheLevel& l : c.caches)
    if (bytes <= double(l.size_bytes) && l.bandwidth_gbs > 0) {
      bandwidth = l.bandwidth_gbs;
      break;
    }
  const double flops = double(*op.flops.as_const_int());
  const double compute_s = flops / (c.peak_gflops_per_core * 1e9 * threads);
  const double memory_s = bandwidth > 0 ? bytes / (bandwidth * 1e9 * threads) : 0;
  return std::max(compute_s, memory_s) * 1e3;
}

// A compiled loom kernel with its buffers, or a chain of them (unfused).
struct LoomRun {
  std::vector<loom::Kernel> kernels;
  std::vector<std::vector<loom::Buffer>> inputs, outputs;
  double construct_ms = 0, codegen_ms = 0, measure_ms = 0;
  std::string schedules;  // each kernel's chosen schedule, "; " between them
  bool ok = true;
  double max_err = 0;
  void run() const {
    for (size_t i = 0; i < kernels.size(); ++i) kernels[i].run(inputs[i], outputs[i]);
  }
};

// The median of the compile's construction time and two more runs of its
// strategy (which the compile cache would not repeat).
double median_construct_ms(const loom::Operator& op, const loom::CompileOptions& o, double compile_ms) {
  std::string note;  // the task compile() made: the same target and thread count
  const loom::Task task = loom::make_task(op, loom::resolve_target(o.target), loom::resolve_threads(o.threads, note));
  std::vector<double> ms{compile_ms};
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    loom::strategy_candidates(task, o, o.top_k);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return bench::median(ms);
}

LoomRun compile_parts(const std::vector<Part>& parts, const loom::HwSpec& target, const std::string& strategy,
                      int top_k, int threads) {
  LoomRun r;
  for (size_t i = 0; i < parts.size(); ++i) {
    loom::Operator op = loom::make_operator(parts[i].op, parts[i].params);
    loom::CompileOptions o;
    o.target = target;
    o.strategy = strategy;
    o.top_k = top_k;
    o.threads = threads;
    loom::Kernel k = loom::compile(op, o);
    auto in = loom::random_inputs(op, 11 + i);
    if (i > 0) in[0] = r.outputs.back()[0];  // the chain feeds its previous result
    std::vector<loom::Buffer> out;
    for (const auto& s : loom::output_shapes(op, in)) out.push_back(loom::Buffer::allocate(s));
    k.run(in, out);
    loom::CheckResult c = loom::check_against_reference(op, in, out, {512, 1e-3, 1});
    r.ok &= c.ok;
    r.max_err = std::max(r.max_err, c.max_rel_err);
    r.construct_ms += median_construct_ms(op, o, k.report().construct_ms);
    r.codegen_ms += k.report().codegen_ms;
    r.measure_ms += k.report().measure_ms;
    r.schedules += (i ? "; " : "") + k.report().schedule;
    r.kernels.push_back(k);
    r.inputs.push_back(in);
    r.outputs.push_back(out);
  }
  return r;
}

}  // namespace

using namespace bench;

int main(int argc, char** argv) {
  std::string suites = "all", threads_arg = "1,all", csv_path = "bench_construct.csv", json_path = "bench_construct.json";
  double budget_ms = 400;
  std::string hwspec;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* f) { return a.rfind(f, 0) == 0 ? a.substr(std::string(f).size()) : std::string(); };
    if (!val("--suite=").empty()) suites = val("--suite=");
    else if (!val("--threads=").empty()) threads_arg = val("--threads=");
    else if (!val("--csv=").empty()) csv_path = val("--csv=");
    else if (!val("--json=").empty()) json_path = val("--json=");
    else if (!val("--budget-ms=").empty()) budget_ms = std::stod(val("--budget-ms="));
    else if (!val("--hwspec=").empty()) hwspec = val("--hwspec=");
    else {
      std::fprintf(stderr,
                   "usage: loom_bench [--suite=gmm,skinny,odd,c2d,incep,dep,mbv2,nrm,row,resnet,bert,fused|all] "
                   "[--threads=1,all] [--csv=FILE] [--json=FILE] [--budget-ms=N] [--hwspec=NAME|FILE]\n");
      return 2;
    }
  }
  std::vector<int> thread_configs;
  std::stringstream ts(threads_arg);
  for (std::string t; std::getline(ts, t, ',');)
    thread_configs.push_back(t == "all" ? int(std::thread::hardware_concurrency()) : std::stoi(t));

  nlohmann::json rows = nlohmann::json::array();
  int failed = 0;  // workloads that did not compile or gave a wrong result
  std::ofstream csv(csv_path);
  csv << "threads,suite,workload,gflop,construct1_gflops,construct10_gflops,roller1_gflops,roller10_gflops,"
         "onednn_gflops,second_gflops,construct1_construct_ms,construct10_construct_ms,codegen_ms,"
         "construct10_measure_ms,c10_vs_onednn,c1_vs_onednn,c_vs_roller_top1,c_vs_roller_top10,c1_vs_c10,"
         "construct1_roof_fraction,ok\n";

  const loom::HwSpec host = hwspec.empty() ? loom::detect_host_cpu() : bench::spec_named(hwspec);
  bench::limit_onednn_isa(host);
  std::printf("%s: %.2f GHz, %d-bit FMA x%d, peak %.1f GFLOP/s per core, L1 %.0f GB/s, DRAM %.1f GB/s per core\n",
              host.name.c_str(), host.cpu.frequency_ghz, host.cpu.vector_bits, host.cpu.fma_units,
              host.cpu.peak_gflops_per_core,
              host.cpu.caches.empty() ? 0.0 : host.cpu.caches[0].bandwidth_gbs, host.cpu.dram_core_bandwidth_gbs);
  for (int threads : thread_configs) {
    pin_to(threads);
    bench::set_library_threads(threads);
    std::printf("\n=== %d thread(s)%s ===\n", threads, threads == 1 ? ", pinned to CPU 0" : "");
    std::printf("%-7s %-31s %8s %8s %8s %8s %8s %8s | %6s %6s %6s %6s %5s | %6s %7s %s\n", "suite", "workload",
                "c-top1", "c-top10", "r-top1", "r-top10", "oneDNN", "2nd", "c10/dn", "c1/dn", "c/r@1", "c/r@10", "roof",
                "cons", "codegen", "check");
    std::map<std::string, std::vector<double>> ratio_dn, ratio_dn1, ratio_roller1, ratio_roller10, ratio_top, ratio_fused,
        ratio_library1, cons_ms, roof;
    std::map<std::string, int> onednn_reference;  // rows where oneDNN ran a reference implementation
    for (const Workload& w : workloads()) {
      if (suites != "all" && ("," + suites + ",").find("," + w.suite + ",") == std::string::npos) continue;
      loom::Operator op = loom::make_operator(w.op.op, w.op.params);
      const double gflop = double(*op.flops.as_const_int()) / 1e9;
      // What every row of this workload says of it, a failure's included.
      nlohmann::json identity = {{"threads", threads}, {"suite", w.suite}, {"workload", w.name}, {"op", w.op.op},
                                  {"params", w.op.params}};
      std::vector<LoomRun> runs;
      try {
        if (w.unfused.empty()) {
          runs.push_back(compile_parts({w.op}, host, "construct", 1, threads));
          runs.push_back(compile_parts({w.op}, host, "construct", 10, threads));
          runs.push_back(compile_parts({w.op}, host, "roller", 1, threads));
          runs.push_back(compile_parts({w.op}, host, "roller", 10, threads));
          // Every strategy's kernel runs on the first one's buffers: their times then differ by the kernels,
          // not by where their buffers fell (an output 4 KiB-aliasing its input costs a depthwise 7x7
          // c1024 a third of its speed on Zen 3).
          for (size_t i = 1; i < runs.size(); ++i) {
            runs[i].inputs = runs[0].inputs;
            runs[i].outputs = runs[0].outputs;
          }
        } else {
          runs.push_back(compile_parts({w.op}, host, "construct", 10, threads));  // fused
          runs.push_back(compile_parts(w.unfused, host, "construct", 10, threads));  // one by one
        }
      } catch (const std::exception& e) {
        // One workload's failure (a loom bug in any strategy) is reported with it; the others still run.
        ++failed;
        std::printf("%-7s %-31s FAILED: %s\n", w.suite.c_str(), w.name.c_str(), e.what());
        identity["ok"] = false;
        identity["error"] = e.what();
        rows.push_back(identity);
        continue;
      }
      std::vector<bench::Baseline> base = w.baselines ? w.baselines() : std::vector<bench::Baseline>{};
      std::vector<std::function<void()>> fns;
      for (const auto& r : runs) fns.push_back([&r] { r.run(); });
      for (const auto& b : base) fns.push_back(b.run);
      std::vector<double> ms = time_interleaved(fns, budget_ms, threads > 1);
      auto gf = [&](size_t i) { return i < ms.size() ? gflop / (ms[i] / 1e3) : NAN; };
      bool ok = true;
      for (const auto& r : runs) ok &= r.ok;
      failed += !ok;
      nlohmann::json row = identity;
      row["gflop"] = gflop;
      row["ok"] = ok;
      if (w.unfused.empty()) {
        double c1 = gf(0), c10 = gf(1), r1 = gf(2), r10 = gf(3), dn = gf(4), blas = base.size() > 1 ? gf(5) : NAN;
        const double roof_frac = roof_ms(op, host, threads) / ms[0];
        // The fastest baseline that is not a reference implementation.
        double library = NAN;
        for (size_t b = 0; b < base.size(); ++b)
          if (!base[b].is_reference() && !(gf(4 + b) <= library)) library = gf(4 + b);
        ratio_library1[w.suite].push_back(c1 / library);
        const bool onednn_is_reference = !base.empty() && base[0].is_reference();
        if (onednn_is_reference) ++onednn_reference[w.suite];
        const std::string second = base.size() > 1 ? base[1].name : "";
        ratio_dn[w.suite].push_back(c10 / dn);
        ratio_dn1[w.suite].push_back(c1 / dn);
        roof[w.suite].push_back(roof_frac);
        ratio_roller1[w.suite].push_back(c1 / r1);
        ratio_roller10[w.suite].push_back(c10 / r10);
        ratio_top[w.suite].push_back(c1 / c10);
        cons_ms[w.suite].push_back(runs[0].construct_ms);
        std::printf("%-7s %-31s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f | %6.2f %6.2f %6.2f %6.2f %5.2f | %4.0fms %5.0fms %s\n",
                    w.suite.c_str(), w.name.c_str(), c1, c10, r1, r10, dn, blas, c10 / dn, c1 / dn, c1 / r1, c10 / r10,
                    roof_frac, runs[0].construct_ms, runs[0].codegen_ms, ok ? "ok" : "WRONG");
        if (onednn_is_reference)
          std::printf("        (oneDNN ran its reference implementation, %s: no measure of an optimized library)\n",
                      base[0].implementation.c_str());
        row.update({{"construct1_gflops", c1}, {"construct10_gflops", c10}, {"roller1_gflops", r1},
                    {"roller10_gflops", r10}, {"onednn_gflops", dn},
                    {"onednn_implementation", base.empty() ? "" : base[0].implementation}, {"second_baseline", second},
                    {"second_gflops", blas}, {"construct1_roof_fraction", roof_frac},
                    {"construct1_construct_ms", runs[0].construct_ms}, {"construct10_construct_ms", runs[1].construct_ms},
                    {"codegen_ms", runs[0].codegen_ms}, {"construct10_measure_ms", runs[1].measure_ms},
                    {"construct1_schedule", runs[0].schedules}, {"construct10_schedule", runs[1].schedules}});
        csv << threads << "," << w.suite << ",\"" << w.name << "\"," << gflop << "," << c1 << "," << c10 << "," << r1
            << "," << r10 << "," << dn << "," << blas << "," << runs[0].construct_ms << "," << runs[1].construct_ms << ","
            << runs[0].codegen_ms << "," << runs[1].measure_ms << "," << c10 / dn << "," << c1 / dn << "," << c1 / r1
            << "," << c10 / r10 << "," << c1 / c10 << "," << roof_frac << "," << ok << "\n";
      } else {
        double fused = gf(0), unfused = gf(1), dn = base.empty() ? NAN : gf(2);
        ratio_fused[w.suite].push_back(fused / unfused);
        std::printf("%-7s %-31s fused %7.1f  unfused %7.1f  oneDNN %7.1f | fused/unfused %5.2f  fused/oneDNN %5.2f %s\n",
                    w.suite.c_str(), w.name.c_str(), fused, unfused, dn, fused / unfused, fused / dn, ok ? "ok" : "WRONG");
        row.update({{"fused_gflops", fused}, {"unfused_gflops", unfused}, {"onednn_gflops", dn},
                    {"fused_vs_unfused", fused / unfused}});
        csv << threads << "," << w.suite << ",\"" << w.name << "\"," << gflop << "," << fused << ",,," << unfused << ","
            << dn << ",,,,,,,,,,,," << ok << "\n";
      }
      rows.push_back(row);
      // Both files hold every workload measured so far: a run stopped early keeps what it measured.
      csv.flush();
      std::ofstream(json_path) << rows.dump(2) << "\n";
      std::fflush(stdout);
    }
    std::printf("\nsummary (%d thread(s)), geometric means:\n", threads);
    for (auto& [suite, v] : ratio_dn)
      std::printf("  %-7s construct / oneDNN: top-1 %.2f (min %.2f), top-10 %.2f   construct / roller: top-1 %.2f, "
                  "top-10 %.2f   top-1 / top-10 %.2f   top-1 roof %.2f   construct top-1 mean %.1f ms\n",
                  suite.c_str(), geomean(ratio_dn1[suite]),
                  *std::min_element(ratio_dn1[suite].begin(), ratio_dn1[suite].end()), geomean(v),
                  geomean(ratio_roller1[suite]), geomean(ratio_roller10[suite]), geomean(ratio_top[suite]),
                  geomean(roof[suite]),
                  [&] { double s = 0; for (double x : cons_ms[suite]) s += x; return s / cons_ms[suite].size(); }());
    for (auto& [suite, v] : ratio_library1) {
      std::printf("  %-7s construct top-1 / fastest optimized library: %.2f (min %.2f)", suite.c_str(), geomean(v),
                  *std::min_element(v.begin(), v.end()));
      if (onednn_reference[suite])
        std::printf("   (oneDNN ran a reference implementation in %d of %zu)", onednn_reference[suite], v.size());
      std::printf("\n");
    }
    for (auto& [suite, v] : ratio_fused) std::printf("  %-7s fused / unfused %.2f\n", suite.c_str(), geomean(v));
  }
  std::printf("\nwrote %s and %s\n", csv_path.c_str(), json_path.c_str());
  if (failed > 0) std::printf("%d workload(s) failed or gave wrong results\n", failed);
  return failed > 0 ? 1 : 0;
}
