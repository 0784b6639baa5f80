// `loom workload`: the distinct operators of a network, compiled, checked
// and timed on the host, printed as a table with how often each occurs.
// `loom workload bert` is the project's main job.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"

namespace loom::cli {

namespace {

std::string params_text(const std::map<std::string, std::string>& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

}  // namespace

int command_workload(const std::vector<std::string>& args) {
  reject_repeated_flags(args);
  RunSettings settings;
  settings.strategy = "construct";  // the main job shows loom's own strategy
  bool json = false;
  std::string name = "bert";
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else if (parse_setting(a, settings)) continue;
    else if (a.rfind("--", 0) == 0) throw UserError("unknown option '" + a + "'");
    else name = a;
  }
  const std::vector<WorkloadTask> tasks = workload_tasks(name);

  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    std::printf("workload %s (strategy %s, threads %s)\n\n", name.c_str(), settings.strategy.c_str(),
                settings.threads ? std::to_string(settings.threads).c_str() : "all");
    std::printf("%-19s %-13s %-50s %5s %9s %9s %9s %10s %s\n", "step", "operator", "parameters", "count", "codegen",
                "time", "GFLOP/s", "max_err", "check");
  }
  double total_ms = 0, total_codegen = 0;
  bool all_ok = true;
  for (const WorkloadTask& t : tasks) {
    RunOutcome r = run_operator(t.op, t.params, settings);
    total_ms += t.weight * r.time_ms;
    total_codegen += r.report.codegen_ms;
    all_ok &= r.check.ok;
    if (json) {
      rows.push_back({{"step", t.label}, {"op", t.op}, {"params", params_text(t.params)}, {"count", t.weight},
                      {"codegen_ms", r.report.codegen_ms}, {"time_ms", r.time_ms}, {"gflops", r.gflops},
                      {"max_rel_err", r.check.max_rel_err}, {"ok", r.check.ok}});
      continue;
    }
    std::printf("%-19s %-13s %-50s %5.0f %6.1f ms %6.3f ms %9.1f %10.2e %s\n", t.label.c_str(), t.op.c_str(),
                params_text(t.params).c_str(), t.weight, r.report.codegen_ms, r.time_ms, r.gflops,
                r.check.max_rel_err, r.check.ok ? "ok" : "WRONG");
  }
  if (json) {
    std::cout << rows.dump(2) << std::endl;
  } else {
    std::printf("\ntotal: %.3f ms (sum of count x median), %.0f ms of code generation; results %s\n", total_ms,
                total_codegen, all_ok ? "all match the reference" : "DO NOT all match the reference");
  }
  return all_ok ? 0 : 1;
}

}  // namespace loom::cli
