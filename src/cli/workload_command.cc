// `loom workload`: the operators of a model layer, compiled, checked and
// timed on the host, printed as a table. This is the project's main job.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"

namespace loom::cli {

namespace {

struct Step {
  const char* label;
  const char* op;
  std::map<std::string, std::string> params;
};

// One BERT-base encoder layer (hidden 768, 12 heads of 64, FFN 3072) at
// batch 1 and sequence length 128.
std::vector<Step> bert_layer() {
  return {
      {"qkv projection", "dense", {{"M", "128"}, {"N", "2304"}, {"K", "768"}, {"epilogue", "bias"}}},
      {"attention scores", "batch_matmul", {{"B", "12"}, {"M", "128"}, {"N", "128"}, {"K", "64"}}},
      {"attention softmax", "softmax", {{"M", "1536"}, {"N", "128"}}},
      {"attention context", "batch_matmul", {{"B", "12"}, {"M", "128"}, {"N", "64"}, {"K", "128"}}},
      {"output projection", "dense", {{"M", "128"}, {"N", "768"}, {"K", "768"}, {"epilogue", "bias"}}},
      {"layernorm 1", "layernorm", {{"M", "128"}, {"N", "768"}}},
      {"ffn up + gelu", "dense", {{"M", "128"}, {"N", "3072"}, {"K", "768"}, {"epilogue", "bias_gelu"}}},
      {"ffn down", "dense", {{"M", "128"}, {"N", "768"}, {"K", "3072"}, {"epilogue", "bias"}}},
      {"layernorm 2", "layernorm", {{"M", "128"}, {"N", "768"}}},
  };
}

std::string params_text(const std::map<std::string, std::string>& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

}  // namespace

int command_workload(const std::vector<std::string>& args) {
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
  LOOM_USER_CHECK(name == "bert", "unknown workload '", name, "' (known: bert)");

  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    std::printf("BERT-base encoder layer, sequence 128, batch 1 (strategy %s, threads %s)\n\n",
                settings.strategy.c_str(), settings.threads ? std::to_string(settings.threads).c_str() : "all");
    std::printf("%-19s %-13s %-38s %9s %9s %9s %10s %s\n", "step", "operator", "parameters", "codegen", "time",
                "GFLOP/s", "max_err", "check");
  }
  double total_ms = 0, total_codegen = 0;
  bool all_ok = true;
  for (const Step& s : bert_layer()) {
    RunOutcome r = run_operator(s.op, s.params, settings);
    total_ms += r.time_ms;
    total_codegen += r.report.codegen_ms;
    all_ok &= r.check.ok;
    if (json) {
      rows.push_back({{"step", s.label}, {"op", s.op}, {"params", params_text(s.params)},
                      {"codegen_ms", r.report.codegen_ms}, {"time_ms", r.time_ms}, {"gflops", r.gflops},
                      {"max_rel_err", r.check.max_rel_err}, {"ok", r.check.ok}});
      continue;
    }
    std::printf("%-19s %-13s %-38s %6.1f ms %6.3f ms %9.1f %10.2e %s\n", s.label, s.op, params_text(s.params).c_str(),
                r.report.codegen_ms, r.time_ms, r.gflops, r.check.max_rel_err, r.check.ok ? "ok" : "WRONG");
  }
  if (json) {
    std::cout << rows.dump(2) << std::endl;
  } else {
    std::printf("\nlayer total: %.3f ms per layer (sum of medians), %.0f ms of code generation; results %s\n",
                total_ms, total_codegen, all_ok ? "all match the reference" : "DO NOT all match the reference");
  }
  return all_ok ? 0 : 1;
}

}  // namespace loom::cli
