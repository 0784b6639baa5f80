// `loom dynamic`: one operator with a symbolic size, called as a framework
// would, over a stream of values, through the dynamic-shape runtime.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/cli.h"

namespace loom::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Taken before main(), after the dynamic loader: the "process start" of cold_start_ms.
const Clock::time_point process_start = Clock::now();

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct DynamicSettings {
  std::string dim;
  std::vector<int64_t> values;
  int threads = 0;
  std::string cache_dir;
  std::string hwspec = "host";
  std::vector<int> compile_cpus;
  int specialize_after = 1;
  bool json = false;
  TimingOptions timing;
};

std::vector<int64_t> parse_values(const std::string& text) {
  std::vector<int64_t> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) values.push_back(parse_count("values", item, 1, 1 << 30));
  LOOM_USER_CHECK(!values.empty() && values.size() <= 100000, "--values needs 1 to 100000 comma-separated sizes");
  return values;
}

std::vector<int> parse_cpus(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) cpus.push_back(parse_count("compile-cpus", item, 0, 4095));
  return cpus;
}

double median_ms(const std::function<void()>& fn, const TimingOptions& t) { return time_function(fn, t).median_ms; }

// Overhead of a cache-hit call on a tiny problem: C[8,8] = A[8,8] B[8,8], M symbolic.
double dispatch_overhead_ns(const JitOptions& options) {
  Operator tiny = make_operator("matmul", {{"N", "8"}, {"K", "8"}}, {"M"});
  JitOptions o = options;
  o.specialize_after = 1;
  JitKernel k = jit(tiny, o);
  std::vector<Buffer> in = random_inputs(tiny, 5, {8});
  std::vector<Buffer> out = allocate_outputs(tiny, in);
  k.run(in, out);
  k.wait_idle();
  k.run(in, out);
  return time_dispatch(k, in, out).overhead_ns();
}

}  // namespace

int command_dynamic(const std::vector<std::string>& args) {
  reject_repeated_flags(args);
  LOOM_USER_CHECK(!args.empty(), "'loom dynamic' needs an operator name (see 'loom ops')");
  DynamicSettings s;
  std::map<std::string, std::string> params;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "--json") s.json = true;
    else if (flag_value(a, "dim", v)) s.dim = v;
    else if (flag_value(a, "values", v)) s.values = parse_values(v);
    else if (flag_value(a, "threads", v)) s.threads = parse_count("threads", v, 0, kMaxThreads);
    else if (flag_value(a, "cache-dir", v)) s.cache_dir = v;
    else if (flag_value(a, "hwspec", v)) s.hwspec = v;
    else if (flag_value(a, "compile-cpus", v)) s.compile_cpus = parse_cpus(v);
    else if (flag_value(a, "specialize-after", v)) s.specialize_after = parse_count("specialize-after", v, 1, 1 << 30);
    else if (flag_value(a, "repeats", v)) s.timing.repeats = parse_count("repeats", v, 1, 100000);
    else if (a.rfind("--", 0) == 0) throw UserError("unknown option '" + a + "'");
    else parse_param(a, params);
  }
  LOOM_USER_CHECK(!s.dim.empty(), "--dim=NAME is required: the size parameter that varies");
  LOOM_USER_CHECK(!s.values.empty(), "--values=v1,v2,... is required");
  const Operator op = make_operator(args[0], params, {s.dim});
  RuntimeOptions ro;
  ro.cache_dir = s.cache_dir;
  ro.compile_cpus = s.compile_cpus;
  Runtime runtime(ro);
  JitOptions options;
  options.compile.target = load_hwspec(s.hwspec);
  options.compile.threads = s.threads;
  options.specialize_after = s.specialize_after;
  JitKernel kernel = runtime.jit(op, options);

  nlohmann::json calls = nlohmann::json::array();
  bool ok = true;
  double cold_start_ms = -1;
  for (int64_t value : s.values) {
    const auto t_inputs = Clock::now();
    std::vector<Buffer> inputs = random_inputs(op, uint64_t(value), {value});
    std::vector<Buffer> outputs = allocate_outputs(op, inputs);
    const auto t0 = Clock::now();
    ServedBy served = kernel.run(inputs, outputs);
    const auto t1 = Clock::now();
    // The first result, less the time this harness spent making random inputs.
    if (cold_start_ms < 0) cold_start_ms = ms_between(process_start, t1) - ms_between(t_inputs, t0);
    CheckResult check = check_against_reference(op, inputs, outputs);
    ok &= check.ok;
    calls.push_back({{"value", value}, {"call_ms", ms_between(t0, t1)}, {"served_by", to_string(served)},
                     {"ok", check.ok}, {"max_rel_err", check.max_rel_err}});
  }
  kernel.wait_idle();  // so a second run with the same cache directory finds them
  const JitStats stats = kernel.stats();

  // Side by side per distinct value: the generic kernel (a handle that never
  // specializes), the specialized one, a static construct kernel.
  JitOptions generic_only = options;
  generic_only.max_specialized = 0;
  JitKernel generic = runtime.jit(op, generic_only);
  nlohmann::json per_value = nlohmann::json::array();
  std::set<int64_t> seen;
  for (int64_t value : s.values) {
    if (!seen.insert(value).second) continue;
    std::vector<Buffer> inputs = random_inputs(op, uint64_t(value), {value});
    std::vector<Buffer> outputs = allocate_outputs(op, inputs);
    generic.run(inputs, outputs);
    generic.wait_idle();
    std::map<std::string, std::string> fixed_params = params;
    fixed_params[s.dim] = std::to_string(value);
    Kernel fixed = compile(make_operator(args[0], fixed_params), options.compile);
    const double generic_ms = median_ms([&] { generic.run(inputs, outputs); }, s.timing);
    const double specialized_ms = median_ms([&] { kernel.run(inputs, outputs); }, s.timing);
    const double static_ms = median_ms([&] { fixed.run(inputs, outputs); }, s.timing);
    per_value.push_back({{"value", value}, {"generic_ms", generic_ms}, {"specialized_ms", specialized_ms},
                         {"static_ms", static_ms}, {"ratio", specialized_ms / static_ms},
                         {"generic_ratio", generic_ms / static_ms},
                         {"schedule", kernel.schedule_for({value})}});
  }
  const double dispatch_ns = dispatch_overhead_ns(options);
  runtime.wait_idle();

  nlohmann::json warnings = stats.warnings;
  nlohmann::json out = {{"op", op.name},
                        {"params", params_json(params)},
                        {"dim", s.dim},
                        {"calls", calls},
                        {"compiles_on_critical_path", stats.compiles_on_critical_path},
                        {"background_compiles", stats.background_compiles},
                        {"disk_loads", stats.disk_loads},
                        {"llvm_compiles", stats.llvm_compiles},
                        {"miss_overhead_max_ms", stats.miss_overhead_max_ms},
                        {"per_value", per_value},
                        {"dispatch_ns", dispatch_ns},
                        {"cold_start_ms", cold_start_ms},
                        {"cache_dir", runtime.cache_dir()},
                        {"warnings", warnings},
                        {"ok", ok}};
  if (s.json) {
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << op.name << " with " << s.dim << " symbolic, " << s.values.size() << " calls, cache "
              << runtime.cache_dir() << "\n";
    for (const auto& c : calls)
      std::cout << "  " << s.dim << "=" << c["value"] << "  " << c["call_ms"].get<double>() << " ms  "
                << c["served_by"].get<std::string>() << (c["ok"].get<bool>() ? "" : "  WRONG") << "\n";
    std::cout << "  compiles on the critical path " << stats.compiles_on_critical_path << ", background "
              << stats.background_compiles << ", disk loads " << stats.disk_loads << "\n";
    for (const auto& p : per_value)
      std::cout << "  " << s.dim << "=" << p["value"] << ": generic " << p["generic_ms"].get<double>()
                << " ms, specialized " << p["specialized_ms"].get<double>() << " ms, static "
                << p["static_ms"].get<double>() << " ms (ratio " << p["ratio"].get<double>() << ")\n";
    std::cout << "  dispatch overhead " << dispatch_ns << " ns, first result " << cold_start_ms
              << " ms after start\n";
    for (const std::string& w : stats.warnings) std::cout << "  warning: " << w << "\n";
    std::cout << "  " << (ok ? "ok" : "WRONG") << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace loom::cli
