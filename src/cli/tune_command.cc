// `loom tune`: tune one operator, or a workload's operators under the task scheduler.
#include <cstdio>
#include <iostream>

#include "cli/cli.h"

namespace loom::cli {

namespace {

nlohmann::json report_json(const TuneReport& r) {
  nlohmann::json curve = nlohmann::json::array();
  for (const TuneCurvePoint& p : r.curve) curve.push_back({{"trials", p.trials}, {"seconds", p.seconds},
                                                           {"best_gflops", p.best_gflops}});
  return {{"op", r.op},
          {"params", params_json(r.params)},
          {"strategy", r.strategy},
          {"hwspec", r.hwspec},
          {"threads", r.threads},
          {"trials", r.trials},
          {"measured", r.measured},
          {"resumed", r.resumed},
          {"errors", r.errors},
          {"tune_s", r.tune_s},
          {"construct_ms", r.construct_ms},
          {"seed_gflops", r.seed_gflops},
          {"best_time_ms", r.best_time_ms},
          {"best_gflops", r.best_gflops},
          {"max_rel_err", r.max_rel_err},
          {"ok", r.ok},
          {"records", r.records},
          {"workload", r.workload_key},
          {"best_schedule", r.best_schedule},
          {"curve", curve}};
}

void print_progress(const TuneProgress& p) {
  std::fprintf(stderr, "[tune] %s: trials %d, errors %d, best %.2f GFLOP/s, %.1f s\n", p.task.c_str(), p.trials,
               p.errors, p.best_gflops, p.elapsed_s);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "loom: warning: %s\n", w.c_str());
}

int print_single(const TuneReport& r, bool json) {
  if (json) {
    std::cout << report_json(r).dump() << std::endl;
  } else {
    std::printf("%s (%s)\n  strategy %s, hwspec %s, threads %d\n  trials %d (measured %d, resumed %d, errors %d) in "
                "%.1f s\n  construction's best %.2f GFLOP/s; best %.4f ms = %.2f GFLOP/s, max_rel_err %.2e: %s\n"
                "  schedule %s",
                r.op.c_str(), r.workload_key.c_str(), r.strategy.c_str(), r.hwspec.c_str(), r.threads,
                r.measured + r.resumed, r.measured, r.resumed, r.errors, r.tune_s, r.seed_gflops, r.best_time_ms,
                r.best_gflops, r.max_rel_err, r.ok ? "ok" : "NO CORRECT KERNEL", r.best_schedule.c_str());
  }
  return r.ok ? 0 : 1;
}

int print_workload(const WorkloadTuneReport& w, bool json) {
  if (json) {
    nlohmann::json tasks = nlohmann::json::array();
    for (size_t i = 0; i < w.tasks.size(); ++i) {
      nlohmann::json t = report_json(w.tasks[i].second);
      t["label"] = w.tasks[i].first;
      t["weight"] = w.weights[i].second;
      tasks.push_back(t);
    }
    std::cout << nlohmann::json{{"workload", w.workload},   {"scheduler", w.scheduler}, {"strategy", w.strategy},
                                {"hwspec", w.hwspec},       {"threads", w.threads},     {"trials", w.trials},
                                {"tune_s", w.tune_s},       {"tasks", tasks},
                                {"weighted_total_ms", w.weighted_total_ms},            {"ok", w.ok}}
                     .dump()
              << std::endl;
  } else {
    std::printf("workload %s: scheduler %s, strategy %s, %d trials in %.1f s\n\n%-20s %7s %7s %11s %9s %s\n",
                w.workload.c_str(), w.scheduler.c_str(), w.strategy.c_str(), w.trials, w.tune_s, "task", "weight",
                "trials", "best ms", "GFLOP/s", "check");
    for (size_t i = 0; i < w.tasks.size(); ++i) {
      const TuneReport& r = w.tasks[i].second;
      std::printf("%-20s %7.0f %7d %11.4f %9.2f %s\n", w.tasks[i].first.c_str(), w.weights[i].second, r.trials,
                  r.best_time_ms, r.best_gflops, r.ok ? "ok" : "NO CORRECT KERNEL");
    }
    std::printf("\nweighted total: %.3f ms\n", w.weighted_total_ms);
  }
  return w.ok ? 0 : 1;
}

}  // namespace

int command_tune(const std::vector<std::string>& args) {
  reject_repeated_flags(args);
  TuneOptions options;
  RunSettings settings;  // the shared flags: --threads, --hwspec, --seed, --walk-steps, --records
  settings.strategy = options.strategy;
  std::string workload, value;
  bool json = false;
  std::map<std::string, std::string> params;
  std::string op;
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else if (flag_value(a, "trials", value)) options.trials = parse_count("trials", value, 1, kMaxTrials);
    else if (flag_value(a, "batch", value)) options.batch = parse_count("batch", value, 1, kMaxBatch);
    else if (flag_value(a, "workload", value)) workload = value;
    else if (flag_value(a, "scheduler", value)) options.scheduler = value;
    else if (flag_value(a, "cost-model", value)) options.cost_model = value;
    else if (flag_value(a, "timeout", value)) options.timeout_s = parse_count("timeout", value, 1, 3600);
    else if (parse_setting(a, settings)) continue;
    else if (a.rfind("--", 0) == 0) throw UserError("unknown option '" + a + "'");
    else if (op.empty() && a.find('=') == std::string::npos) op = a;
    else parse_param(a, params);
  }
  LOOM_USER_CHECK(!settings.dump_ir && settings.top_k == 1, "'loom tune' takes --trials, not --top-k or --dump-ir");
  options.strategy = settings.strategy;
  options.target = load_hwspec(settings.hwspec);
  options.threads = settings.threads;
  options.seed = settings.seed;
  options.records = settings.records;
  if (settings.walk_steps > 0) options.walk_steps = settings.walk_steps;
  if (!workload.empty()) {
    LOOM_USER_CHECK(op.empty() && params.empty(), "give either --workload or an operator, not both");
    WorkloadTuneReport w = tune_workload(workload, options, print_progress);
    print_warnings(w.warnings);
    return print_workload(w, json);
  }
  LOOM_USER_CHECK(!op.empty(), "'loom tune' needs an operator name (see 'loom ops') or --workload=NAME");
  TuneResult r = tune(make_operator(op, params), options, print_progress);
  print_warnings(r.report.warnings);
  return print_single(r.report, json);
}

}  // namespace loom::cli
