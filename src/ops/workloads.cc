#include <functional>

#include "loom/error.h"
#include "loom/workloads.h"

namespace loom {

namespace {

using Params = std::map<std::string, std::string>;

std::vector<WorkloadTask> bert_layer() {
  auto dense = [](const char* n, const char* k, const char* ep) {
    return Params{{"M", "128"}, {"N", n}, {"K", k}, {"epilogue", ep}};
  };
  const double layers = 12;
  return {
      {"qkv projection", "dense", dense("2304", "768", "bias"), layers},
      {"attention scores", "batch_matmul", {{"B", "12"}, {"M", "128"}, {"N", "128"}, {"K", "64"}}, layers},
      {"attention softmax", "softmax", {{"M", "1536"}, {"N", "128"}}, layers},
      {"attention context", "batch_matmul", {{"B", "12"}, {"M", "128"}, {"N", "64"}, {"K", "128"}}, layers},
      {"output projection", "dense", dense("768", "768", "bias"), layers},
      {"layernorm", "layernorm", {{"M", "128"}, {"N", "768"}}, 2 * layers},
      {"ffn up + gelu", "dense", dense("3072", "768", "bias_gelu"), layers},
      {"ffn down", "dense", dense("768", "3072", "bias"), layers},
  };
}

std::vector<WorkloadTask> resnet50() {
  auto conv = [](int h, int ci, int co, int k, int stride) {
    const std::string pad = std::to_string(k / 2);
    return Params{{"N", "1"},  {"H", std::to_string(h)},   {"W", std::to_string(h)},
                  {"CI", std::to_string(ci)}, {"CO", std::to_string(co)}, {"KH", std::to_string(k)},
                  {"KW", std::to_string(k)},  {"stride", std::to_string(stride)}, {"pad", pad}};
  };
  auto c = [&](const char* label, int h, int ci, int co, int k, double count) {
    return WorkloadTask{label, "conv2d", conv(h, ci, co, k, 1), count};
  };
  return {
      {"stem 7x7/2", "conv2d", conv(224, 3, 64, 7, 2), 1},
      c("56 1x1 64->64", 56, 64, 64, 1, 1),
      c("56 3x3 64->64", 56, 64, 64, 3, 3),
      c("56 1x1 64->256", 56, 64, 256, 1, 4),
      c("56 1x1 256->64", 56, 256, 64, 1, 2),
      c("28 3x3 128->128", 28, 128, 128, 3, 4),
      c("28 1x1 128->512", 28, 128, 512, 1, 4),
      c("28 1x1 512->128", 28, 512, 128, 1, 3),
      c("14 3x3 256->256", 14, 256, 256, 3, 6),
      c("14 1x1 256->1024", 14, 256, 1024, 1, 6),
      c("14 1x1 1024->256", 14, 1024, 256, 1, 5),
      c("7 3x3 512->512", 7, 512, 512, 3, 3),
      c("7 1x1 512->2048", 7, 512, 2048, 1, 3),
      c("7 1x1 2048->512", 7, 2048, 512, 1, 2),
      {"classifier", "dense", {{"M", "1"}, {"N", "1000"}, {"K", "2048"}, {"epilogue", "bias"}}, 1},
  };
}

const std::map<std::string, std::function<std::vector<WorkloadTask>()>>& table() {
  static const std::map<std::string, std::function<std::vector<WorkloadTask>()>> t = {{"bert", bert_layer},
                                                                                       {"resnet50", resnet50}};
  return t;
}

}  // namespace

std::vector<std::string> workload_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : table()) names.push_back(n);
  return names;
}

std::vector<WorkloadTask> workload_tasks(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& n : workload_names()) known += (known.empty() ? "" : ", ") + n;
    throw UserError("unknown workload '" + name + "' (known: " + known + ")");
  }
  return it->second();
}

}  // namespace loom
