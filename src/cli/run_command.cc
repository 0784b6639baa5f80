// `loom ops` and `loom run`.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <set>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "codegen/gpu/nvrtc.h"

namespace loom::cli {

bool flag_value(const std::string& arg, const std::string& name, std::string& value) {
  std::string prefix = "--" + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  value = arg.substr(prefix.size());
  return true;
}

int parse_count(const std::string& flag, const std::string& value, int minimum, int maximum) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  LOOM_USER_CHECK(used == value.size() && !value.empty(), "--", flag, "='", value, "' is not an integer");
  LOOM_USER_CHECK(v >= minimum && v <= maximum, "--", flag, "=", v, " is outside [", minimum, ", ", maximum, "]");
  return int(v);
}

bool parse_setting(const std::string& a, RunSettings& settings) {
  std::string v;
  if (a == "--dump-ir") settings.dump_ir = true;
  else if (flag_value(a, "strategy", v)) settings.strategy = v;
  else if (flag_value(a, "hwspec", v)) settings.hwspec = v;
  else if (flag_value(a, "threads", v)) settings.threads = parse_count("threads", v, 0, kMaxThreads);
  else if (flag_value(a, "repeats", v)) settings.timing.repeats = parse_count("repeats", v, 1, 100000);
  else if (flag_value(a, "top-k", v)) settings.top_k = parse_count("top-k", v, 1, kMaxTopK);
  else if (flag_value(a, "walk-steps", v)) settings.walk_steps = parse_count("walk-steps", v, 1, kMaxWalkSteps);
  else if (flag_value(a, "seed", v)) settings.seed = uint64_t(parse_count("seed", v, 0, 2147483647));
  else if (flag_value(a, "records", v)) settings.records = v;
  else if (flag_value(a, "emit-source", v)) settings.emit_source = v;
  else return false;
  return true;
}

void reject_repeated_flags(const std::vector<std::string>& args) {
  std::set<std::string> seen;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    LOOM_USER_CHECK(seen.insert(name).second, "option ", name, " given twice");
  }
}

int command_ops(const std::vector<std::string>& args) {
  LOOM_USER_CHECK(args.empty(), "'loom ops' takes no arguments, got '", args.front(), "'");
  for (const OperatorInfo& info : list_operators()) {
    std::cout << info.name << ": " << info.summary << "\n";
    for (const ParamSpec& p : info.params) {
      std::cout << "    " << std::left << std::setw(10) << p.name;
      if (p.kind == ParamKind::Choice) {
        std::string all;
        for (const auto& c : p.choices) all += (all.empty() ? "" : "|") + c;
        std::cout << all << " [" << p.default_value << "]";
      } else {
        std::cout << "int" << (p.default_value.empty() ? " (required)" : " [" + p.default_value + "]");
      }
      std::cout << "  " << p.doc << "\n";
    }
  }
  return 0;
}

namespace {

void write_source(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  LOOM_USER_CHECK(f.good(), "--emit-source: cannot write '", path, "'");
  f << text;
  f.close();
  LOOM_USER_CHECK(f.good(), "--emit-source: writing '", path, "' failed");
}

RunOutcome::Nvrtc nvrtc_report(const Kernel& kernel, const HwSpec& target) {
  RunOutcome::Nvrtc r;
  r.arch = codegen::sm_arch(target.gpu.compute_capability);
  codegen::NvrtcOutput out = codegen::nvrtc_compile(kernel.source(), kernel.op().name, r.arch, true);
  r.compile_ms = out.compile_ms;
  for (const auto& [name, k] : out.kernels) {
    r.registers = std::max(r.registers, k.registers);
    r.spill_bytes += k.spill_bytes;
    r.shared_bytes = std::max(r.shared_bytes, k.shared_bytes);
  }
  return r;
}

}  // namespace

RunOutcome run_operator(const std::string& name, const std::map<std::string, std::string>& params,
                        const RunSettings& settings) {
  RunOutcome out;
  out.op = make_operator(name, params);
  check_run_memory(out.op);
  out.strategy = settings.strategy;
  out.hwspec = settings.hwspec;
  out.threads = settings.threads;
  out.top_k = settings.top_k;
  CompileOptions options;
  options.strategy = settings.strategy;
  options.target = load_hwspec(settings.hwspec);
  options.threads = settings.threads;
  options.top_k = settings.top_k;
  options.seed = settings.seed;
  options.records = settings.records;
  if (settings.walk_steps > 0) options.walk_steps = settings.walk_steps;
  Kernel kernel = compile(out.op, options);
  out.report = kernel.report();
  const bool gpu = options.target.kind == TargetKind::Gpu;
  if (settings.dump_ir)
    std::cerr << "# schedule\n" << out.report.schedule << "\n# loop IR\n" << out.report.loop_ir
              << (gpu ? "\n# CUDA C\n" : "\n# LLVM IR (optimized)\n") << kernel.llvm_ir() << "\n";
  if (!settings.emit_source.empty()) write_source(settings.emit_source, kernel.source());
  if (gpu && codegen::nvrtc_available()) out.nvrtc = nvrtc_report(kernel, options.target);

  std::vector<Buffer> inputs = random_inputs(out.op, /*seed=*/42, {});
  std::vector<Buffer> outputs = allocate_outputs(out.op, inputs);
  kernel.run(inputs, outputs);
  out.executed_on = kernel.executed_on();
  out.check = check_against_reference(out.op, inputs, outputs);

  TimingResult t = time_function([&] { kernel.run(inputs, outputs); }, settings.timing);
  out.time_ms = t.median_ms;
  double flops = double(*out.op.flops.as_const_int());
  out.gflops = flops / (t.median_ms * 1e6);
  return out;
}

namespace {

nlohmann::json to_json(const RunOutcome& r) {
  nlohmann::json nvrtc = nullptr;
  if (r.nvrtc)
    nvrtc = {{"arch", r.nvrtc->arch}, {"compile_ms", r.nvrtc->compile_ms}, {"registers", r.nvrtc->registers},
             {"spill_bytes", r.nvrtc->spill_bytes}, {"shared_bytes", r.nvrtc->shared_bytes}};
  return {{"op", r.op.name},
          {"params", params_json(r.op.params)},
          {"strategy", r.strategy},
          {"hwspec", r.hwspec},
          {"threads", r.threads},
          {"construct_ms", r.report.construct_ms},
          {"codegen_ms", r.report.codegen_ms},
          {"measured_candidates", r.report.measured_candidates},
          {"candidates", r.report.candidates},
          {"measure_ms", r.report.measure_ms},
          {"predicted_ms", r.report.predicted_ms},
          {"top_k", r.top_k},
          {"time_ms", r.time_ms},
          {"gflops", r.gflops},
          {"max_rel_err", r.check.max_rel_err},
          {"points_checked", r.check.points_checked},
          {"ok", r.check.ok},
          {"from_records", r.report.from_records},
          {"executed_on", r.executed_on},
          {"nvrtc", nvrtc},
          {"note", r.report.note}};
}

}  // namespace

nlohmann::json params_json(const std::map<std::string, std::string>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : params) {
    bool numeric = !v.empty() && v.size() < 19 && v.find_first_not_of("0123456789") == std::string::npos;
    out[k] = numeric ? nlohmann::json(std::stoll(v)) : nlohmann::json(v);
  }
  return out;
}

void parse_param(const std::string& arg, std::map<std::string, std::string>& params) {
  size_t eq = arg.find('=');
  LOOM_USER_CHECK(eq != std::string::npos && eq > 0, "argument '", arg, "' is not <param>=<value>");
  std::string key = arg.substr(0, eq);
  LOOM_USER_CHECK(!params.count(key), "parameter ", key, " given twice");
  params[key] = arg.substr(eq + 1);
}

int command_run(const std::vector<std::string>& args) {
  reject_repeated_flags(args);
  LOOM_USER_CHECK(!args.empty(), "'loom run' needs an operator name (see 'loom ops')");
  RunSettings settings;
  bool json = false;
  std::map<std::string, std::string> params;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") json = true;
    else if (parse_setting(a, settings)) continue;
    else if (a.rfind("--", 0) == 0) throw UserError("unknown option '" + a + "'");
    else parse_param(a, params);
  }
  RunOutcome r = run_operator(args[0], params, settings);
  if (json) {
    std::cout << to_json(r).dump() << std::endl;
  } else {
    std::cout << r.op.name;
    for (const auto& [k, v] : r.op.params) std::cout << " " << k << "=" << v;
    std::cout << "\n  strategy " << r.strategy << ", hwspec " << r.hwspec << ", threads " << r.threads
              << ", top-k " << r.top_k << " (" << r.report.measured_candidates << " measured)"
              << "\n  construct " << r.report.construct_ms << " ms, codegen " << r.report.codegen_ms << " ms"
              << "\n  time " << r.time_ms << " ms (median), " << r.gflops << " GFLOP/s"
              << (r.report.note.empty() ? "" : "\n  note: " + r.report.note)
              << "\n  max_rel_err " << r.check.max_rel_err << " over " << r.check.points_checked << " points: "
              << (r.check.ok ? "ok" : "WRONG") << ", executed on " << r.executed_on << "\n";
    if (r.nvrtc)
      std::cout << "  nvrtc " << r.nvrtc->arch << ": " << r.nvrtc->compile_ms << " ms, " << r.nvrtc->registers
                << " registers, " << r.nvrtc->spill_bytes << " spill bytes, " << r.nvrtc->shared_bytes
                << " bytes shared\n";
  }
  return r.check.ok ? 0 : 1;
}

}  // namespace loom::cli
