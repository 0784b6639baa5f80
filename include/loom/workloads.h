// Named model workloads: the distinct operators of a network and how often
// each occurs, the unit the task scheduler shares a tuning budget over.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loom {

struct WorkloadTask {
  std::string label;                          // e.g. "ffn up + gelu"
  std::string op;                             // operator name (see `loom ops`)
  std::map<std::string, std::string> params;
  double weight = 1;                          // occurrences in the network
};

// "bert": one BERT-base encoder layer at sequence 128 (weights: 12 layers);
// "resnet50": ResNet-50's convolutions at batch 1 plus its classifier
// (weights: occurrences). Identical operators are merged, weights summed.
// UserError for an unknown name.
std::vector<WorkloadTask> workload_tasks(const std::string& name);
std::vector<std::string> workload_names();

}  // namespace loom
