// Tuning curves: construction, hybrid, search and random in the same state
// space, on the same measurer, beside oneDNN.
//
//   loom_bench_tune [--shapes=all|gemm1024,conv56,...] [--hybrid-trials=64] [--search-trials=256]
//                   [--random-trials=64] [--out=DIR] [--budget-ms=400] [--seed=S]
//
// Runs on one thread pinned to CPU 0. For each shape it tunes with hybrid,
// search and random (records in DIR), and measures construct top-10 and
// roller top-10 through the same tuner interface; the curves (best GFLOP/s
// against measurements and seconds, as measured while tuning) go to
// DIR/bench_tune_curves.csv. Then every method's final kernel (hybrid@16 and
// @N, search@64 and @N, random@N, construct top-1 and top-10, roller
// top-10) is checked against the reference and timed round-robin in this
// process beside oneDNN (blocked layouts for convolutions), and the table
// goes to stdout and DIR/bench_tune_final.csv.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "bench_util.h"
#include "loom/loom.h"
#include "onednn_baselines.h"

namespace {

using Params = std::map<std::string, std::string>;

struct Shape {
  std::string name, label, op;
  Params params;
  std::function<bench::Baseline()> onednn;
};

std::string S(int64_t v) { return std::to_string(v); }

Shape gemm(const std::string& name, int64_t M, int64_t N, int64_t K, bool dense) {
  Params p{{"M", S(M)}, {"N", S(N)}, {"K", S(K)}};
  return {name, (dense ? "dense " : "matmul ") + S(M) + "x" + S(N) + "x" + S(K), dense ? "dense" : "matmul", p,
          [=] { return bench::onednn_gemm(M, N, K, dense); }};
}

Shape conv(const std::string& name, int64_t H, int64_t CI, int64_t CO, int64_t k, int64_t stride, bool depthwise) {
  loom::ops::Conv2dParams c;
  c.N = 1; c.H = c.W = H; c.CI = CI; c.CO = CO; c.KH = c.KW = k; c.stride = stride; c.pad = k / 2;
  c.groups = depthwise ? CI : 1;
  Params p{{"N", "1"}, {"H", S(H)}, {"W", S(H)}, {"KH", S(k)}, {"KW", S(k)}, {"stride", S(stride)}, {"pad", S(k / 2)}};
  if (depthwise) p["C"] = S(CI);
  else p["CI"] = S(CI), p["CO"] = S(CO);
  std::string label = (depthwise ? "depthwise " + S(H) + "x" + S(H) + "x" + S(CI)
                                 : "conv " + S(H) + "x" + S(H) + " " + S(CI) + "->" + S(CO)) +
                      " " + S(k) + "x" + S(k) + "/" + S(stride);
  return {name, label, depthwise ? "depthwise_conv2d" : "conv2d", p, [c] { return bench::onednn_conv(c, false, true); }};
}

std::vector<Shape> shapes() {
  return {gemm("gemm1024", 1024, 1024, 1024, false), gemm("gemm512", 512, 512, 512, false),
          gemm("bert2048", 2048, 3072, 768, true),   gemm("bert80", 80, 3072, 768, true),
          conv("conv56", 56, 64, 64, 3, 1, false),   conv("conv14", 14, 256, 256, 3, 1, false),
          conv("conv7", 7, 512, 512, 3, 1, false),   conv("conv224", 224, 3, 64, 7, 2, false),
          conv("dep112", 112, 32, 32, 3, 1, true),   conv("dep14", 14, 512, 512, 3, 2, true)};
}

// The first n lines of a records file, as a file of their own: the state of
// a tuning run after n measurements.
std::string prefix_records(const std::string& path, int n) {
  std::ifstream in(path);
  std::string out_path = path + "." + S(n), line;
  std::ofstream out(out_path, std::ios::trunc);
  for (int i = 0; i < n && std::getline(in, line); ++i) out << line << "\n";
  return out_path;
}

struct Method {
  std::string name;
  loom::Kernel kernel;
  double tune_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string which = "all", out_dir = "bench_tune_out";
  int hybrid_trials = 64, search_trials = 256, random_trials = 64;
  double budget_ms = 400;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* f) { return a.rfind(f, 0) == 0 ? a.substr(std::string(f).size()) : std::string(); };
    if (!val("--shapes=").empty()) which = val("--shapes=");
    else if (!val("--hybrid-trials=").empty()) hybrid_trials = std::stoi(val("--hybrid-trials="));
    else if (!val("--search-trials=").empty()) search_trials = std::stoi(val("--search-trials="));
    else if (!val("--random-trials=").empty()) random_trials = std::stoi(val("--random-trials="));
    else if (!val("--out=").empty()) out_dir = val("--out=");
    else if (!val("--budget-ms=").empty()) budget_ms = std::stod(val("--budget-ms="));
    else if (!val("--seed=").empty()) seed = std::stoull(val("--seed="));
    else {
      std::fprintf(stderr, "usage: loom_bench_tune [--shapes=all|NAME,...] [--hybrid-trials=N] [--search-trials=N] "
                           "[--random-trials=N] [--out=DIR] [--budget-ms=N] [--seed=S]\n");
      return 2;
    }
  }
  bench::pin_to(1);
  bench::set_library_threads(1);
  mkdir(out_dir.c_str(), 0755);
  std::ofstream curves(out_dir + "/bench_tune_curves.csv"), finals(out_dir + "/bench_tune_final.csv");
  curves << "shape,label,method,trials,seconds,best_gflops\n";
  finals << "shape,label,method,gflops,vs_onednn,tune_s,ok\n";
  const loom::HwSpec host = loom::detect_host_cpu();

  std::map<std::string, std::vector<double>> ratio;  // method -> per-shape ratio to oneDNN
  std::map<std::string, std::vector<double>> vs_top1;
  const std::vector<std::string> columns = {"c-top1", "c-top10", "r-top10", "hybrid@16", "hybrid@" + S(hybrid_trials),
                                            "search@64", "search@" + S(search_trials), "random@" + S(random_trials)};
  std::printf("%-28s", "shape (GFLOP/s, 1 thread)");
  for (const auto& c : columns) std::printf(" %10s", c.c_str());
  std::printf(" %8s | %8s %8s %8s\n", "oneDNN", "h/dnn", "h/top1", "h tune_s");
  for (const Shape& shape : shapes()) {
    if (which != "all" && ("," + which + ",").find("," + shape.name + ",") == std::string::npos) continue;
    loom::Operator op = loom::make_operator(shape.op, shape.params);
    const double flops = double(*op.flops.as_const_int());
    std::vector<Method> methods;
    auto tuned = [&](const std::string& strategy, int trials) {
      loom::TuneOptions o;
      o.strategy = strategy;
      o.threads = 1;
      o.trials = trials;
      o.seed = seed;
      o.records = out_dir + "/" + shape.name + "_" + strategy + ".jsonl";
      std::remove(o.records.c_str());
      loom::TuneResult r = loom::tune(op, o, [&](const loom::TuneProgress& p) {
        std::fprintf(stderr, "[%s %s] trials %d, errors %d, best %.1f GFLOP/s, %.1f s\n", shape.name.c_str(),
                     strategy.c_str(), p.trials, p.errors, p.best_gflops, p.elapsed_s);
      });
      for (const auto& p : r.report.curve)
        curves << shape.name << "," << shape.label << "," << strategy << "," << p.trials << "," << p.seconds << ","
               << p.best_gflops << "\n";
      curves.flush();
      return std::make_pair(r, o.records);
    };
    auto from_records = [&](const std::string& path, int n) {
      loom::CompileOptions co;
      co.threads = 1;
      co.records = prefix_records(path, n);
      return loom::compile(op, co);
    };
    {
      loom::CompileOptions co;
      co.strategy = "construct";
      co.threads = 1;
      loom::Kernel k = loom::compile(op, co);
      methods.push_back({"c-top1", k, k.report().construct_ms / 1e3});
    }
    auto [c10, c10_path] = tuned("construct", 10);
    methods.push_back({"c-top10", c10.kernel, c10.report.tune_s});
    auto [r10, r10_path] = tuned("roller", 10);
    methods.push_back({"r-top10", r10.kernel, r10.report.tune_s});
    auto [h, h_path] = tuned("hybrid", hybrid_trials);
    methods.push_back({"hybrid@16", from_records(h_path, 16), 0});
    methods.push_back({"hybrid@" + S(hybrid_trials), h.kernel, h.report.tune_s});
    auto [s, s_path] = tuned("search", search_trials);
    methods.push_back({"search@64", from_records(s_path, 64), 0});
    methods.push_back({"search@" + S(search_trials), s.kernel, s.report.tune_s});
    auto [rnd, rnd_path] = tuned("random", random_trials);
    methods.push_back({"random@" + S(random_trials), rnd.kernel, rnd.report.tune_s});

    // Side by side: every final kernel, checked, then timed round-robin with oneDNN.
    std::vector<std::function<void()>> fns;
    std::vector<bool> ok;
    std::vector<std::vector<loom::Buffer>> ins, outs;
    for (const Method& m : methods) {
      ins.push_back(loom::random_inputs(op, 5));
      outs.emplace_back();
      for (const auto& sh : loom::output_shapes(op, ins.back())) outs.back().push_back(loom::Buffer::allocate(sh));
      m.kernel.run(ins.back(), outs.back());
      ok.push_back(loom::check_against_reference(op, ins.back(), outs.back(), {512, 1e-3, 1}).ok);
    }
    for (size_t i = 0; i < methods.size(); ++i)
      fns.push_back([&, i] { methods[i].kernel.run(ins[i], outs[i]); });
    bench::Baseline dnn = shape.onednn();
    fns.push_back(dnn.run);
    std::vector<double> ms = bench::time_interleaved(fns, budget_ms, false);
    const double dnn_gflops = flops / (ms.back() * 1e6);
    std::printf("%-28s", shape.label.c_str());
    double top1 = 0, hybrid = 0, hybrid_s = 0;
    for (size_t i = 0; i < methods.size(); ++i) {
      const double g = flops / (ms[i] * 1e6);
      std::printf(" %9.1f%s", g, ok[i] ? " " : "!");
      finals << shape.name << "," << shape.label << "," << methods[i].name << "," << g << "," << g / dnn_gflops << ","
             << methods[i].tune_s << "," << (ok[i] ? "true" : "false") << "\n";
      ratio[methods[i].name].push_back(g / dnn_gflops);
      if (methods[i].name == "c-top1") top1 = g;
      if (methods[i].name == "hybrid@" + S(hybrid_trials)) hybrid = g, hybrid_s = methods[i].tune_s;
    }
    vs_top1["hybrid"].push_back(hybrid / top1);
    finals << shape.name << "," << shape.label << ",oneDNN," << dnn_gflops << ",1,0,true\n";
    finals.flush();
    std::printf(" %8.1f | %8.2f %8.2f %8.1f\n", dnn_gflops, hybrid / dnn_gflops, hybrid / top1, hybrid_s);
    std::fflush(stdout);
  }
  std::printf("\ngeomean vs oneDNN:");
  for (const auto& c : columns) std::printf("  %s %.2f", c.c_str(), bench::geomean(ratio[c]));
  std::printf("\ngeomean hybrid@%d / construct top-1: %.2f\n", hybrid_trials, bench::geomean(vs_top1["hybrid"]));
  std::printf("curves: %s/bench_tune_curves.csv, final: %s/bench_tune_final.csv (CPU: %s)\n", out_dir.c_str(),
              out_dir.c_str(), host.name.c_str());
  return 0;
}
