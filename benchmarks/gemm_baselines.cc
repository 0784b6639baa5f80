// loom GEMM next to oneDNN and OpenBLAS SGEMM, measured in one process.
//
//   loom_bench_gemm [--threads=N] [--strategy=NAME] [--sizes=M[xNxK],...] [--csv=FILE]
//
// Each shape is timed round-robin (loom, oneDNN, OpenBLAS, repeated) so that
// frequency drift and neighbours' noise hit all three alike; medians are
// reported with loom's ratio to each library. Pin it for single-thread
// figures: taskset -c 0 loom_bench_gemm --threads=1.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace {

struct Shape {
  int64_t M, N, K;
};

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    Shape s{};
    int n = std::sscanf(item.c_str(), "%ldx%ldx%ld", &s.M, &s.N, &s.K);
    if (n == 1) s.N = s.K = s.M;
    if ((n != 1 && n != 3) || s.M <= 0 || s.N <= 0 || s.K <= 0) {
      std::fprintf(stderr, "loom_bench_gemm: bad shape '%s' (use 1024 or 128x768x3072)\n", item.c_str());
      std::exit(2);
    }
    shapes.push_back(s);
  }
  return shapes;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::string strategy = "construct", csv_path, sizes = "128,256,512,1024";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--threads=", 0) == 0) threads = std::atoi(a.c_str() + 10);
    else if (a.rfind("--strategy=", 0) == 0) strategy = a.substr(11);
    else if (a.rfind("--sizes=", 0) == 0) sizes = a.substr(8);
    else if (a.rfind("--csv=", 0) == 0) csv_path = a.substr(6);
    else {
      std::fprintf(stderr, "usage: loom_bench_gemm [--threads=N] [--strategy=NAME] [--sizes=...] [--csv=FILE]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  // Both libraries read their thread count before first use.
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  openblas_set_num_threads(threads);

  std::printf("GEMM C[M,N] = A[M,K] B[K,N], fp32, %d thread(s), loom strategy '%s'\n\n", threads, strategy.c_str());
  std::printf("%6s %6s %6s | %9s %9s %9s | %8s %8s | %10s %s\n", "M", "N", "K", "loom", "oneDNN", "OpenBLAS",
              "/oneDNN", "/OpenBLAS", "codegen_ms", "check");
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "M,N,K,threads,strategy,loom_gflops,onednn_gflops,openblas_gflops,codegen_ms,ok\n";
  }
  for (const Shape& s : parse_shapes(sizes)) {
    loom::Operator op = loom::ops::matmul(s.M, s.N, s.K);
    loom::CompileOptions options;
    options.strategy = strategy;
    options.threads = threads;
    loom::Kernel kernel = loom::compile(op, options);
    auto in = loom::random_inputs(op, 1);
    loom::Buffer C = loom::Buffer::allocate({s.M, s.N}), C2 = loom::Buffer::allocate({s.M, s.N});
    kernel.run(in, {C});
    bool ok = loom::check_against_reference(op, in, {C}).ok;
    const float* A = in[0].as<float>();
    const float* B = in[1].as<float>();

    auto run_loom = [&] { kernel.run(in, {C}); };
    auto run_dnnl = [&] { dnnl_sgemm('N', 'N', s.M, s.N, s.K, 1.f, A, s.K, B, s.N, 0.f, C2.as<float>(), s.N); };
    auto run_blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.M, s.N, s.K, 1.f, A, s.K, B, s.N, 0.f,
                  C2.as<float>(), s.N);
    };
    const double flops = 2.0 * s.M * s.N * s.K;
    // Round-robin: one sample of each, repeated, until ~0.3 s per library.
    std::vector<double> t_loom, t_dnnl, t_blas;
    loom::TimingOptions once;
    once.warmup = 1;
    once.repeats = 1;
    once.min_total_ms = 0;
    double spent = 0;
    for (int rep = 0; rep < 200 && (rep < 7 || spent < 900); ++rep) {
      once.warmup = rep == 0 ? 2 : 0;
      t_loom.push_back(loom::time_function(run_loom, once).median_ms);
      t_dnnl.push_back(loom::time_function(run_dnnl, once).median_ms);
      t_blas.push_back(loom::time_function(run_blas, once).median_ms);
      spent += t_loom.back() + t_dnnl.back() + t_blas.back();
    }
    double g_loom = flops / median(t_loom) / 1e6, g_dnnl = flops / median(t_dnnl) / 1e6,
           g_blas = flops / median(t_blas) / 1e6;
    std::printf("%6ld %6ld %6ld | %9.1f %9.1f %9.1f | %8.2f %8.2f | %10.1f %s\n", s.M, s.N, s.K, g_loom, g_dnnl,
                g_blas, g_loom / g_dnnl, g_loom / g_blas, kernel.report().codegen_ms, ok ? "ok" : "WRONG");
    if (csv) csv << s.M << "," << s.N << "," << s.K << "," << threads << "," << strategy << "," << g_loom << ","
                 << g_dnnl << "," << g_blas << "," << kernel.report().codegen_ms << "," << ok << "\n";
  }
  std::printf("\nGFLOP/s, medians of interleaved runs; ratios are loom / library.\n");
  return 0;
}
