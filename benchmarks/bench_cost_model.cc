// Ranking quality of the cost models on held-out measurements.
// (xgboost is the tuner's default: Ansor's label-weighted squared error.)
//
//   loom_bench_cost_model [--split=alternate] RECORDS.jsonl...
//
// Reads tuning records (of this machine's host spec), rebuilds each
// workload's task, replays every measured state, and for each workload
// trains on the first half of its measurements in order (the past) and
// tests on the second half (the future), as tuning does; or, with
// --split=alternate, on every other measurement. Each model
// (analytic, XGBoost with a pairwise ranking loss, XGBoost with Ansor's
// label-weighted squared error) is scored on the test half by Kendall's tau
// between predicted score and measured speed, and by top-1 recall: the
// fraction of workloads where the test state the model ranks first
// measures within 5% of the fastest test state. Failed measurements count
// as slowest. Models are trained on all workloads' train halves together,
// as the tuner shares one model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "loom/loom.h"
#include "search/cost_model.h"
#include "search/records.h"

namespace {

struct Split {
  loom::Task task;
  std::vector<loom::State> train, test;
  std::vector<loom::MeasureResult> train_results, test_results;
};

double kendall_tau(const std::vector<double>& score, const std::vector<double>& speed) {
  long concordant = 0, discordant = 0;
  for (size_t i = 0; i < score.size(); ++i)
    for (size_t j = i + 1; j < score.size(); ++j) {
      double a = score[i] - score[j], b = speed[i] - speed[j];
      if (a * b > 0) ++concordant;
      else if (a * b < 0) ++discordant;
    }
  return concordant + discordant ? double(concordant - discordant) / double(concordant + discordant) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool alternate = argc > 1 && std::string(argv[1]) == "--split=alternate";
  if (argc < 2 + int(alternate)) {
    std::fprintf(stderr, "usage: loom_bench_cost_model [--split=alternate] RECORDS.jsonl...\n");
    return 2;
  }
  const loom::HwSpec host = loom::detect_host_cpu();
  const std::string fp = loom::hwspec_fingerprint(host);
  std::map<std::string, std::vector<loom::Record>> by_workload;
  for (int i = 1 + int(alternate); i < argc; ++i) {
    std::vector<std::string> warnings;
    for (loom::Record& r : loom::load_records(argv[i], warnings))
      if (r.hwspec_fingerprint == fp) by_workload[r.workload + " t" + std::to_string(r.threads)].push_back(r);
    for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  std::vector<Split> splits;
  for (auto& [key, records] : by_workload) {
    if (records.size() < 8) continue;
    Split s{loom::make_task(loom::make_operator(records[0].op, records[0].params), host, records[0].threads)};
    for (size_t i = 0; i < records.size(); ++i) {
      std::string why;
      loom::State st = loom::replay_record(records[i], s.task, why);
      if (!st) continue;
      const loom::MeasureResult m = loom::measure_result(records[i]);
      bool train = alternate ? i % 2 == 0 : i < records.size() / 2;
      (train ? s.train : s.test).push_back(st);
      (train ? s.train_results : s.test_results).push_back(m);
    }
    splits.push_back(std::move(s));
  }
  std::printf("%zu workloads with >= 8 measurements on this host\n", splits.size());
  std::printf("%-14s %10s %14s\n", "model", "mean tau", "top-1 recall");
  for (const char* name : {"analytic", "xgboost", "xgboost-rank", "xgboost-residual"}) {
    std::unique_ptr<loom::CostModel> model = loom::make_cost_model(name);
    for (Split& s : splits) model->update(s.task, s.train, s.train_results);
    double tau_sum = 0;
    int hits = 0;
    for (Split& s : splits) {
      std::vector<double> score = model->predict(s.task, s.test), speed;
      double best = 0;
      for (const auto& m : s.test_results) {
        speed.push_back(m.ok() ? 1.0 / m.time_ms : 0);
        best = std::max(best, speed.back());
      }
      tau_sum += kendall_tau(score, speed);
      size_t top = size_t(std::max_element(score.begin(), score.end()) - score.begin());
      hits += speed[top] >= 0.95 * best;
    }
    std::printf("%-14s %10.3f %9d / %zu\n", name, tau_sum / double(splits.size()), hits, splits.size());
  }
  return 0;
}
