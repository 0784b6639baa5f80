// Dynamic-shape streams through loom's runtime, against recompiling every
// new shape on the critical path (what Inductor-style runtimes do) and
// against static kernels compiled ahead for every shape.
//
//   bert: the BERT-base sequence stream of DietCode: dense layers with
//         M = 16*T (768->2304 QKV, 768->768 out, 768->3072+GELU, 3072->768),
//         batch matmuls QK^T and PV (192 heads, T symbolic) and the softmax
//         between them, for T in {5, 24, 43, 62, 81, 100, 119, 128} in a
//         shuffled order, repeated;
//   gpt2: decode steps with M = batch in 1..16 against 768->2304 and
//         768->3072, in a random order.
// The caller runs on CPU 0 with one kernel thread; compile threads on the
// other usable CPUs (all of them when there is one).
//
// usage: loom_bench_dynamic [--stream=bert,gpt2] [--passes=N] [--json=FILE]
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "ir/size_binding.h"
#include "loom/loom.h"

namespace {

using loom::Buffer;
using loom::Expr;
using loom::Operator;
using loom::Var;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One symbolic operator of a stream, and how its size binds from the stream's value.
struct StreamOp {
  std::string name;
  Operator op;
  std::function<int64_t(int64_t)> size_of;  // stream value -> the op's symbolic size
};

struct Stream {
  std::string name;
  std::vector<StreamOp> ops;
  std::vector<int64_t> values;  // the order values arrive in
};

Stream bert_stream(int passes) {
  Var t("T");
  Var m("M");
  Stream s{"bert", {}, {}};
  auto dense = [&](const std::string& name, int64_t n, int64_t k, loom::ops::Epilogue e) {
    s.ops.push_back({name, loom::ops::dense(m, n, k, e), [](int64_t v) { return 16 * v; }});
  };
  dense("qkv 768->2304", 2304, 768, loom::ops::Epilogue::Bias);
  dense("attn-out 768->768", 768, 768, loom::ops::Epilogue::Bias);
  dense("ffn1 768->3072 gelu", 3072, 768, loom::ops::Epilogue::BiasGelu);
  dense("ffn2 3072->768", 768, 3072, loom::ops::Epilogue::Bias);
  auto identity = [](int64_t v) { return v; };
  s.ops.push_back({"bmm QK^T", loom::ops::batch_matmul(192, t, t, 64), identity});
  s.ops.push_back({"softmax", loom::ops::softmax(Expr(192) * t, t), identity});
  s.ops.push_back({"bmm PV", loom::ops::batch_matmul(192, t, 64, t), identity});
  const std::vector<int64_t> ts = {5, 24, 43, 62, 81, 100, 119, 128};
  std::mt19937 rng(7);
  for (int p = 0; p < passes; ++p) {
    std::vector<int64_t> pass = ts;
    std::shuffle(pass.begin(), pass.end(), rng);
    s.values.insert(s.values.end(), pass.begin(), pass.end());
  }
  return s;
}

Stream gpt2_stream(int passes) {
  Var m("M");
  Stream s{"gpt2", {}, {}};
  auto identity = [](int64_t v) { return v; };
  s.ops.push_back({"768->2304", loom::ops::dense(m, 2304, 768), identity});
  s.ops.push_back({"768->3072", loom::ops::dense(m, 3072, 768), identity});
  std::mt19937 rng(11);
  for (int i = 0; i < 32 * passes; ++i) s.values.push_back(1 + int64_t(rng() % 16));
  return s;
}

// Inputs and outputs per (op, value), made once.
struct Data {
  std::vector<Buffer> inputs, outputs;
};
using DataMap = std::map<std::pair<size_t, int64_t>, Data>;

DataMap make_data(const Stream& s) {
  DataMap data;
  for (int64_t v : s.values)
    for (size_t i = 0; i < s.ops.size(); ++i) {
      auto key = std::make_pair(i, v);
      if (data.count(key)) continue;
      Data d;
      d.inputs = loom::random_inputs(s.ops[i].op, 1, {s.ops[i].size_of(v)});
      d.outputs = loom::allocate_outputs(s.ops[i].op, d.inputs);
      data[key] = std::move(d);
    }
  return data;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100 * double(v.size())))];
}

// One way of serving a stream: a callable per (op index, value), timed per call.
struct ModeResult {
  std::string mode;
  std::vector<double> call_ms;  // per stream step (all ops of one value)
  double total_ms = 0;
  double time_to_specialized_ms = -1;  // from the stream's start until every later call was specialized
  int critical_compiles = 0;
  double miss_overhead_max_ms = 0;  // longest wait of a call on an unseen shape before its kernel ran
};

nlohmann::json summary(const ModeResult& r) {
  return {{"mode", r.mode},
          {"total_ms", r.total_ms},
          {"p50_ms", percentile(r.call_ms, 50)},
          {"p90_ms", percentile(r.call_ms, 90)},
          {"p99_ms", percentile(r.call_ms, 99)},
          {"max_ms", percentile(r.call_ms, 100)},
          {"time_to_specialized_ms", r.time_to_specialized_ms},
          {"compiles_on_critical_path", r.critical_compiles},
          {"miss_overhead_max_ms", r.miss_overhead_max_ms}};
}

std::vector<int> other_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() > 1) cpus.erase(cpus.begin());
  return cpus;
}

// Runs `fn` on a thread pinned to the process's first CPU: the caller's
// core. The main thread keeps the whole mask, so compile threads may be
// given the others.
void on_caller_cpu(const std::function<void()>& fn) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) ++first;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    sched_setaffinity(0, sizeof(one), &one);  // this thread only
    fn();
  });
  t.join();
}

ModeResult run_jit(const Stream& s, DataMap& data, const std::string& mode, const std::string& cache_dir,
                   bool background, std::vector<loom::JitKernel>* kept) {
  loom::RuntimeOptions ro;
  ro.cache_dir = cache_dir;
  ro.disk_cache = !cache_dir.empty();
  ro.compile_cpus = other_cpus();
  loom::Runtime runtime(ro);
  loom::JitOptions jo;
  jo.compile.threads = 1;
  jo.background = background;
  std::vector<loom::JitKernel> kernels;
  for (const StreamOp& o : s.ops) kernels.push_back(runtime.jit(o.op, jo));
  ModeResult r{mode, {}, 0, -1, 0, 0};
  on_caller_cpu([&] {
    const auto start = Clock::now();
    double last_unspecialized = 0;
    for (int64_t v : s.values) {
      const auto t0 = Clock::now();
      bool all_special = true;
      for (size_t i = 0; i < s.ops.size(); ++i) {
        Data& d = data[{i, v}];
        all_special &= kernels[i].run(d.inputs, d.outputs) != loom::ServedBy::Generic;
      }
      r.call_ms.push_back(ms_since(t0));
      if (!all_special) last_unspecialized = ms_since(start);
    }
    r.total_ms = ms_since(start);
    r.time_to_specialized_ms = last_unspecialized;
  });
  for (auto& k : kernels) {
    k.wait_idle();
    r.critical_compiles += k.stats().compiles_on_critical_path;
    r.miss_overhead_max_ms = std::max(r.miss_overhead_max_ms, k.stats().miss_overhead_max_ms);
  }
  if (kept) *kept = kernels;
  return r;
}

ModeResult run_static(const Stream& s, DataMap& data, std::map<std::pair<size_t, int64_t>, loom::Kernel>& fixed) {
  loom::CompileOptions co;
  co.threads = 1;
  for (const auto& [key, d] : data) {
    const StreamOp& o = s.ops[key.first];
    fixed[key] = loom::compile(loom::with_sizes(o.op, {o.size_of(key.second)}), co);
  }
  ModeResult r{"static (compiled ahead, not counted)", {}, 0, 0, 0, 0};
  on_caller_cpu([&] {
    const auto start = Clock::now();
    for (int64_t v : s.values) {
      const auto t0 = Clock::now();
      for (size_t i = 0; i < s.ops.size(); ++i) fixed[{i, v}].run(data[{i, v}].inputs, data[{i, v}].outputs);
      r.call_ms.push_back(ms_since(t0));
    }
    r.total_ms = ms_since(start);
  });
  return r;
}

}  // namespace

namespace {

// Per (op, value), timed side by side: the bucket's generic kernel, the
// specialized kernel, the static kernel.
nlohmann::json compare_kernels(const Stream& s, DataMap& data, std::vector<loom::JitKernel>& specialized,
                               std::map<std::pair<size_t, int64_t>, loom::Kernel>& fixed, double budget_ms) {
  loom::RuntimeOptions ro;
  ro.disk_cache = false;
  ro.compile_cpus = other_cpus();
  loom::Runtime runtime(ro);
  loom::JitOptions jo;
  jo.compile.threads = 1;
  jo.max_specialized = 0;
  std::vector<loom::JitKernel> generic;
  for (const StreamOp& o : s.ops) generic.push_back(runtime.jit(o.op, jo));
  for (const auto& [key, d] : data) generic[key.first].run(d.inputs, d.outputs);
  runtime.wait_idle();
  nlohmann::json rows = nlohmann::json::array();
  std::map<size_t, std::vector<double>> gen_ratio, spec_ratio;
  for (auto& [key, d] : data) {
    const size_t i = key.first;
    std::vector<double> t;
    on_caller_cpu([&] { t = bench::time_interleaved({[&] { generic[i].run(d.inputs, d.outputs); },
                                      [&] { specialized[i].run(d.inputs, d.outputs); },
                                      [&] { fixed[key].run(d.inputs, d.outputs); }},
                                     budget_ms, false); });
    gen_ratio[i].push_back(t[0] / t[2]);
    spec_ratio[i].push_back(t[1] / t[2]);
    rows.push_back({{"op", s.ops[i].name}, {"value", key.second}, {"size", s.ops[i].size_of(key.second)},
                    {"generic_ms", t[0]}, {"specialized_ms", t[1]}, {"static_ms", t[2]},
                    {"generic_ratio", t[0] / t[2]}, {"specialized_ratio", t[1] / t[2]}});
  }
  nlohmann::json per_op = nlohmann::json::array();
  std::vector<double> all_gen, all_spec;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    per_op.push_back({{"op", s.ops[i].name}, {"generic_geomean", bench::geomean(gen_ratio[i])},
                      {"generic_max", *std::max_element(gen_ratio[i].begin(), gen_ratio[i].end())},
                      {"specialized_geomean", bench::geomean(spec_ratio[i])},
                      {"specialized_max", *std::max_element(spec_ratio[i].begin(), spec_ratio[i].end())}});
    all_gen.insert(all_gen.end(), gen_ratio[i].begin(), gen_ratio[i].end());
    all_spec.insert(all_spec.end(), spec_ratio[i].begin(), spec_ratio[i].end());
  }
  return {{"rows", rows}, {"per_op", per_op}, {"generic_geomean", bench::geomean(all_gen)},
          {"specialized_geomean", bench::geomean(all_spec)},
          {"specialized_max", *std::max_element(all_spec.begin(), all_spec.end())}};
}

void print_modes(const std::vector<ModeResult>& modes) {
  std::printf("  %-40s %10s %9s %9s %9s %9s %12s %9s %9s\n", "mode", "total ms", "p50", "p90", "p99", "max",
              "to-special", "compiles", "miss-ms");
  for (const ModeResult& m : modes)
    std::printf("  %-40s %10.1f %9.2f %9.2f %9.2f %9.2f %12.1f %9d %9.3f\n", m.mode.c_str(), m.total_ms,
                percentile(m.call_ms, 50), percentile(m.call_ms, 90), percentile(m.call_ms, 99),
                percentile(m.call_ms, 100), m.time_to_specialized_ms, m.critical_compiles, m.miss_overhead_max_ms);
}

nlohmann::json run_stream(const Stream& s, double budget_ms) {
  std::printf("stream %s: %zu operators, %zu steps\n", s.name.c_str(), s.ops.size(), s.values.size());
  DataMap data = make_data(s);
  const std::string cache = (std::filesystem::temp_directory_path() /
                             ("loom-bench-dynamic-" + std::to_string(getpid()) + "-" + s.name)).string();
  std::filesystem::remove_all(cache);
  std::vector<ModeResult> modes;
  std::vector<loom::JitKernel> specialized;
  modes.push_back(run_jit(s, data, "loom jit (cold cache)", cache, true, &specialized));
  modes.push_back(run_jit(s, data, "loom jit (warm disk cache)", cache, true, nullptr));
  modes.push_back(run_jit(s, data, "recompile each new shape (critical path)", "", false, nullptr));
  std::map<std::pair<size_t, int64_t>, loom::Kernel> fixed;
  modes.push_back(run_static(s, data, fixed));
  std::filesystem::remove_all(cache);
  print_modes(modes);
  nlohmann::json cmp = compare_kernels(s, data, specialized, fixed, budget_ms);
  for (const auto& row : cmp["per_op"])
    std::printf("  %-22s generic/static geomean %.3f (max %.3f), specialized/static geomean %.3f (max %.3f)\n",
                row["op"].get<std::string>().c_str(), row["generic_geomean"].get<double>(),
                row["generic_max"].get<double>(), row["specialized_geomean"].get<double>(),
                row["specialized_max"].get<double>());
  std::printf("  all: generic/static %.3f, specialized/static %.3f (max %.3f)\n", cmp["generic_geomean"].get<double>(),
              cmp["specialized_geomean"].get<double>(), cmp["specialized_max"].get<double>());
  nlohmann::json out = {{"stream", s.name}, {"steps", s.values.size()}, {"kernels", cmp}};
  for (const ModeResult& m : modes) out["modes"].push_back(summary(m));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows line by line when redirected
  std::string streams = "bert,gpt2", json_path;
  int passes = 3;
  double budget_ms = 150;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--stream=", 0) == 0) streams = a.substr(9);
    else if (a.rfind("--passes=", 0) == 0) passes = std::max(1, std::atoi(a.c_str() + 9));
    else if (a.rfind("--budget-ms=", 0) == 0) budget_ms = std::max(10.0, std::atof(a.c_str() + 12));
    else if (a.rfind("--json=", 0) == 0) json_path = a.substr(7);
    else {
      std::cerr << "usage: loom_bench_dynamic [--stream=bert,gpt2] [--passes=N] [--budget-ms=MS] [--json=FILE]\n";
      return 2;
    }
  }
  std::printf("caller pinned to its first CPU, kernels on 1 thread; compile threads on CPU(s)");
  for (int c : other_cpus()) std::printf(" %d", c);
  std::printf("\n");
  nlohmann::json out = nlohmann::json::array();
  std::stringstream ss(streams);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name == "bert") out.push_back(run_stream(bert_stream(passes), budget_ms));
    else if (name == "gpt2") out.push_back(run_stream(gpt2_stream(passes), budget_ms));
    else {
      std::cerr << "unknown stream '" << name << "' (bert, gpt2)\n";
      return 2;
    }
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}
