// How well the analytic model ranks states on this machine (issue 8): for
// each shape and each spec, construction's top K states (predicted times)
// are compiled, checked and timed (interleaved passes, medians), and the
// Spearman rank correlation of predicted and measured time is reported, with
// how far the model's first pick is from the fastest state measured.
//
//   loom_bench_model_rank [--k=40] [--specs=host,host256] [--only=OP] [--json=FILE]
//                         [--shape=OP:NAME=V,NAME=V...] [--show=N] [--records=FILE]
//   loom_bench_model_rank --rescore=FILE --specs=SPEC [--only=OP] [--json=FILE] [--show=N]
//
// --shape ranks that one shape instead of the list; --show prints each
// shape's first N states with predicted and measured times and the model's
// terms (to see where it mis-ranks). --records appends every state timed as
// a tuning record (search/records.h: its steps and times). --rescore times
// nothing: it ranks the states of such a file, measured on another machine
// (one no longer at hand), by this build's model under SPEC (that machine's
// spec, as `loom hwspecs show host` printed it there), so that a change to
// the model is judged against that machine's measurements. With --show, it
// prints each shape's first N recorded states with this build's terms.
// Specs: `host` is the detected (measured) host; `host256` is the same core
// restricted to AVX2 (bench_specs.h); any other name or path is loaded as a
// spec. Run pinned: taskset -c 0.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_specs.h"
#include "construct/analytic_model.h"
#include "construct/construct.h"
#include "loom/loom.h"
#include "search/measurer.h"
#include "search/records.h"

namespace {

using Params = std::map<std::string, std::string>;

struct Shape {
  std::string op;
  Params params;
};

std::vector<Shape> shapes() {
  auto conv = [](int H, int CI, int CO, int k, int s) {
    return Shape{"conv2d", {{"N", "1"}, {"H", std::to_string(H)}, {"W", std::to_string(H)}, {"CI", std::to_string(CI)},
                            {"CO", std::to_string(CO)}, {"KH", std::to_string(k)}, {"KW", std::to_string(k)},
                            {"stride", std::to_string(s)}, {"pad", std::to_string(k / 2)}}};
  };
  return {{"matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}}},
          {"matmul", {{"M", "197"}, {"N", "771"}, {"K", "3072"}}},
          {"matmul", {{"M", "37"}, {"N", "1000"}, {"K", "771"}}},
          conv(56, 64, 64, 3, 1),
          conv(14, 256, 256, 3, 1),
          conv(17, 192, 224, 3, 1),
          {"depthwise_conv2d", {{"N", "1"}, {"H", "75"}, {"W", "75"}, {"C", "88"}, {"KH", "5"}, {"KW", "5"},
                                {"stride", "2"}, {"pad", "2"}}},
          {"depthwise_conv2d", {{"N", "1"}, {"H", "112"}, {"W", "112"}, {"C", "32"}, {"KH", "3"}, {"KW", "3"},
                                {"stride", "1"}, {"pad", "1"}}}};
}

// "matmul:M=1,N=4096,K=4096".
Shape parse_shape(const std::string& text) {
  Shape shape{text.substr(0, text.find(':')), {}};
  std::stringstream rest(text.find(':') == std::string::npos ? "" : text.substr(text.find(':') + 1));
  for (std::string kv; std::getline(rest, kv, ',');)
    shape.params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  return shape;
}

// Ranks with ties averaged.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * double(i + j);
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : NAN;
}

// One shape's row of the table (and of the JSON) from its states' predicted and measured times, the model's
// first pick first.
struct Ranking {
  std::vector<double> rhos, picks;
  nlohmann::json rows = nlohmann::json::array();
  void add(const std::string& spec, const std::string& label, const std::vector<double>& predicted,
           const std::vector<double>& measured, double flops) {
    if (measured.empty()) return;
    const double best = *std::min_element(measured.begin(), measured.end());
    const size_t first = size_t(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
    const double rho = spearman(predicted, measured), pick = best / measured[first];
    const double gflops = flops / (best * 1e6);
    std::printf("%-44.44s %6zu %9.2f %12.2f %12.1f\n", label.c_str(), measured.size(), rho, pick, gflops);
    std::fflush(stdout);
    rhos.push_back(rho);
    picks.push_back(pick);
    rows.push_back({{"spec", spec}, {"shape", label}, {"states", measured.size()}, {"spearman", rho},
                    {"top1_over_best", pick}, {"best_gflops", gflops}});
  }
  void summary(const std::string& spec) {
    if (rhos.empty()) {
      std::printf("spec %s: no shape ranked\n", spec.c_str());
      return;
    }
    double mean_rho = 0, geo_pick = 0;
    for (double r : rhos) mean_rho += r / double(rhos.size());
    for (double p : picks) geo_pick += std::log(p) / double(picks.size());
    std::printf("spec %s: mean spearman %.2f, model's first pick at %.2f of the best (geomean)\n", spec.c_str(),
                mean_rho, std::exp(geo_pick));
    rhos.clear();
    picks.clear();
  }
};

void print_header(const std::string& name, const loom::HwSpec& spec) {
  std::printf("\n=== spec %s: %d-bit, %d FMA units, peak %.1f GFLOP/s ===\n", name.c_str(), spec.cpu.vector_bits,
              spec.cpu.fma_units, spec.cpu.peak_gflops_per_core);
  std::printf("%-44s %6s %9s %12s %12s\n", "shape", "states", "spearman", "top1/best", "best GFLOP/s");
}

// Construction's top k states of each shape, timed here.
void rank_measured(const std::string& name, int k, const std::vector<Shape>& list, const std::string& only,
                   size_t show, loom::RecordWriter* records, Ranking& ranking) {
  const loom::HwSpec spec = bench::spec_named(name);
  print_header(name, spec);
  for (const Shape& shape : list) {
    if (!only.empty() && shape.op != only) continue;
    loom::Operator op = loom::make_operator(shape.op, shape.params);
    loom::Task task = loom::make_task(op, spec, 1);
    std::vector<loom::Candidate> batch;
    const std::vector<loom::RankedState> ranked = loom::construct_states(task, k, {});
    for (const loom::RankedState& r : ranked) batch.push_back(loom::make_candidate(task, r.state, r.estimate.seconds));
    loom::MeasureOptions mo;
    mo.isolate = false;
    mo.min_pass_ms = 10;
    mo.prune_ratio = 1e9;  // every state timed in full: the ranking is the point
    std::vector<loom::MeasureResult> results = loom::Measurer(task, mo).measure(batch);
    std::vector<double> predicted, measured;
    std::vector<loom::Record> timed;
    for (size_t i = 0; i < batch.size(); ++i) {
      timed.push_back(loom::make_record(task, "construct", batch[i], results[i]));
      if (!results[i].ok()) continue;
      predicted.push_back(batch[i].predicted_s);
      measured.push_back(results[i].time_ms);
    }
    if (records) records->append(timed);
    for (size_t i = 0; i < std::min(show, batch.size()); ++i)
      std::printf("  #%zu measured %.4f ms  %s\n      %s\n", i, results[i].ok() ? results[i].time_ms : NAN,
                  ranked[i].estimate.str().c_str(), ranked[i].state->str().c_str());
    std::string label = shape.op;
    for (const auto& [key, v] : shape.params) label += " " + key + "=" + v;
    ranking.add(name, label, predicted, measured, double(*op.flops.as_const_int()));
  }
  ranking.summary(name);
}

// One shape's correct records, predicted by this build under `spec`.
void rank_workload(const std::string& name, const loom::HwSpec& spec, const std::vector<loom::Record>& records,
                   const std::string& workload, const std::string& only, size_t show, Ranking& ranking) {
  std::optional<loom::Task> task;
  std::optional<loom::Operator> op;
  std::vector<double> predicted, measured;
  std::string first_error;
  int refused = 0;
  for (const loom::Record& r : records) {
    if (r.workload != workload || r.hwspec != spec.name || !r.ok() || (!only.empty() && r.op != only)) continue;
    if (!task) {
      op = loom::make_operator(r.op, r.params);
      task = loom::make_task(*op, spec, r.threads);
    }
    std::string error;
    const loom::State state = loom::replay_record(r, *task, error);
    if (!state) {
      if (refused++ == 0) first_error = error;
      continue;
    }
    const loom::Estimate estimate = loom::estimate(*task->anchor, *state, spec, task->threads);
    if (predicted.size() < show)
      std::printf("  #%zu measured %.4f ms  %s\n      %s\n", predicted.size(), r.time_ms, estimate.str().c_str(),
                  state->str().c_str());
    predicted.push_back(estimate.seconds);
    measured.push_back(r.time_ms);
  }
  if (refused > 0)
    std::fprintf(stderr, "warning: %s: %d states do not replay under %s (%s)\n", workload.c_str(), refused,
                 name.c_str(), first_error.c_str());
  if (op) ranking.add(name, workload, predicted, measured, double(*op->flops.as_const_int()));
}

// The records made under a spec of the same name as `name`'s, shape by shape (in the file's order).
void rank_recorded(const std::string& name, const std::vector<loom::Record>& records, const std::string& only,
                   size_t show, Ranking& ranking) {
  const loom::HwSpec spec = bench::spec_named(name);
  print_header(name, spec);
  std::vector<std::string> workloads;
  for (const loom::Record& r : records)
    if (r.hwspec == spec.name && std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end())
      workloads.push_back(r.workload);
  for (const std::string& workload : workloads) {
    try {
      rank_workload(name, spec, records, workload, only, show, ranking);
    } catch (const loom::UserError& e) {  // a record of an operator this build does not know, say
      std::fprintf(stderr, "warning: %s: skipped: %s\n", workload.c_str(), e.what());
    }
  }
  ranking.summary(name);
}

}  // namespace

int main(int argc, char** argv) {
  int k = 40;
  std::string specs = "host,host256", json_path = "bench_model_rank.json", only, one_shape, records_path, rescore;
  size_t show = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--k=", 0) == 0) k = std::stoi(a.substr(4));
    else if (a.rfind("--specs=", 0) == 0) specs = a.substr(8);
    else if (a.rfind("--json=", 0) == 0) json_path = a.substr(7);
    else if (a.rfind("--only=", 0) == 0) only = a.substr(7);
    else if (a.rfind("--shape=", 0) == 0) one_shape = a.substr(8);
    else if (a.rfind("--show=", 0) == 0) show = size_t(std::stoul(a.substr(7)));
    else if (a.rfind("--records=", 0) == 0) records_path = a.substr(10);
    else if (a.rfind("--rescore=", 0) == 0) rescore = a.substr(10);
    else {
      std::fprintf(stderr, "usage: loom_bench_model_rank [--k=40] [--specs=host,host256] [--only=OP] [--json=FILE] "
                           "[--shape=OP:NAME=V,...] [--show=N] [--records=FILE] | --rescore=FILE --specs=SPEC\n");
      return 2;
    }
  }
  try {
    std::optional<loom::RecordWriter> records;
    if (!records_path.empty()) records.emplace(records_path);
    std::vector<loom::Record> recorded;
    if (!rescore.empty()) {
      std::vector<std::string> warnings;
      recorded = loom::load_records(rescore, warnings);
      for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
      if (recorded.empty()) {
        std::fprintf(stderr, "error: --rescore=%s: no records to rank\n", rescore.c_str());
        return 2;
      }
    }
    const std::vector<Shape> list = one_shape.empty() ? shapes() : std::vector<Shape>{parse_shape(one_shape)};
    Ranking ranking;
    std::stringstream names(specs);
    for (std::string name; std::getline(names, name, ',');) {
      if (rescore.empty()) rank_measured(name, k, list, only, show, records ? &*records : nullptr, ranking);
      else rank_recorded(name, recorded, only, show, ranking);
    }
    std::ofstream(json_path) << ranking.rows.dump(2) << "\n";
  } catch (const loom::UserError& e) {
    std::fprintf(stderr, "loom_bench_model_rank: %s\n", e.what());
    return 1;
  }
  return 0;
}
