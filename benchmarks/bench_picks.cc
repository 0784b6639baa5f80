// Construction's top-1 picks of this build against another build's (issue 8):
// a change to the model or the walk moves picks, and only timing the old and
// the new pick side by side in one process says whether it helped; suite runs
// minutes apart differ by the machine's noise.
//
//   loom_bench_picks --shapes=FILE --dump=OUT     this build's top-1 step lists, a line per shape
//   loom_bench_picks --shapes=FILE --against=IN   IN's picks (another build's --dump) against this build's
//   --seed=N                                      the walk's seed for this build's picks (default 1)
//   --hwspec=NAME|FILE                            the spec to construct and compile for (default: the host's;
//                                                 host256: the host restricted to AVX2)
//
// FILE holds an operator per line: its name, then NAME=VALUE parameters
// ("matmul M=512 N=512 K=512"); empty lines and lines from '#' are skipped.
// pick_shapes.txt is a small set; every loom_bench shape comes from its JSON
// (bench_construct.cc says how): a change judged on the small set alone
// moved picks off it (matmul 5x1021x1021 ran 0.48x on one Zen 3 core).
// --against replays each shape's steps from IN, checks both kernels against
// the reference, times them interleaved (medians) and prints base/new per
// shape and their geomean. Steps that no longer replay (another steps
// version, or a rule that now refuses them) are reported and the shape is
// skipped. Run pinned: taskset -c 0.
//
// A model change also moves where the walk ends on shapes whose picks it
// does not re-score (the walk passes through states it does). Comparing
// dumps and picks made with the same few seeds separates the two. A change
// to the spec's figures (a probe's, say) is tried the same way: dump with
// one spec file, compare with another; the kernels run on the host either way.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_specs.h"
#include "bench_util.h"
#include "construct/construct.h"
#include "driver/compile_schedule.h"
#include "loom/loom.h"
#include "schedule/state.h"
#include "schedule/task.h"

namespace {

struct Shape {
  std::string line;
  loom::Operator op;
};

std::vector<Shape> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw loom::UserError("cannot read the shapes file '" + path + "'");
  std::vector<Shape> shapes;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name, kv;
    if (!(words >> name)) continue;
    std::map<std::string, std::string> params;
    while (words >> kv) params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    shapes.push_back({line, loom::make_operator(name, params)});
  }
  return shapes;
}

// A state's steps on one line (';' between steps), and back.
std::string steps_line(const loom::State& s) {
  std::string text = loom::serialize_steps(s->history());
  std::replace(text.begin(), text.end(), '\n', ';');
  return text;
}
std::vector<loom::Step> steps_of_line(std::string line) {
  std::replace(line.begin(), line.end(), ';', '\n');
  return loom::parse_steps(line);
}

loom::State top1(const loom::Task& task, uint64_t seed) {
  loom::ConstructOptions options;
  options.seed = seed;
  return loom::construct_states(task, 1, options).at(0).state;
}

// Median ms of the two states' kernels, timed interleaved; negative when
// either does not match the reference.
std::pair<double, double> time_pair(const loom::Operator& op, const loom::Task& task, const loom::State& a,
                                    const loom::State& b) {
  const auto inputs = loom::random_inputs(op, 3);
  std::vector<loom::Buffer> out;
  for (const auto& shape : loom::output_shapes(op, inputs)) out.push_back(loom::Buffer::allocate(shape));
  loom::Kernel k[2] = {loom::compile_schedule(op, loom::make_candidate(task, a, 0).schedule, task.target, 1),
                       loom::compile_schedule(op, loom::make_candidate(task, b, 0).schedule, task.target, 1)};
  for (loom::Kernel& kernel : k) {
    kernel.run(inputs, out);
    if (!loom::check_against_reference(op, inputs, out).ok) return {-1, -1};
  }
  const std::vector<double> ms =
      bench::time_interleaved({[&] { k[0].run(inputs, out); }, [&] { k[1].run(inputs, out); }}, 800, false);
  return {ms[0], ms[1]};
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_path, dump, against, hwspec;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--shapes=", 0) == 0) shapes_path = a.substr(9);
    else if (a.rfind("--dump=", 0) == 0) dump = a.substr(7);
    else if (a.rfind("--against=", 0) == 0) against = a.substr(10);
    else if (a.rfind("--hwspec=", 0) == 0) hwspec = a.substr(9);
    else if (a.rfind("--seed=", 0) == 0) {
      const std::string v = a.substr(7);
      const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), seed);
      if (error != std::errc() || end != v.data() + v.size() || v.empty()) {
        std::fprintf(stderr, "loom_bench_picks: --seed must be a non-negative integer, got '%s'\n", v.c_str());
        return 2;
      }
    }
    else shapes_path.clear(), i = argc;
  }
  if (shapes_path.empty() || dump.empty() == against.empty()) {
    std::fprintf(stderr,
                 "usage: loom_bench_picks --shapes=FILE (--dump=OUT | --against=IN) [--seed=N] [--hwspec=NAME|FILE]\n");
    return 2;
  }
  try {
    const loom::HwSpec spec = hwspec.empty() ? loom::detect_host_cpu() : bench::spec_named(hwspec);
    if (spec.kind != loom::TargetKind::Cpu)
      throw loom::UserError("--hwspec must name a CPU spec, got '" + hwspec + "'");
    const std::vector<Shape> shapes = read_shapes(shapes_path);
    if (!dump.empty()) {
      std::ofstream out(dump);
      for (const Shape& s : shapes) out << steps_line(top1(loom::make_task(s.op, spec, 1), seed)) << '\n';
      if (!out) throw loom::UserError("cannot write '" + dump + "'");
      std::printf("wrote %zu step lists to %s\n", shapes.size(), dump.c_str());
      return 0;
    }
    std::ifstream in(against);
    if (!in) throw loom::UserError("cannot read '" + against + "'");
    std::vector<double> ratios;
    for (const Shape& s : shapes) {
      std::string line;
      if (!std::getline(in, line)) throw loom::UserError("'" + against + "' has fewer lines than the shapes file");
      const loom::Task task = loom::make_task(s.op, spec, 1);
      loom::State base;
      try {
        base = loom::replay(*task.anchor, spec, steps_of_line(line));
      } catch (const loom::UserError& e) {
        std::printf("%-64s skipped: %s\n", s.line.c_str(), e.what());
        continue;
      }
      const loom::State mine = top1(task, seed);
      const auto [base_ms, new_ms] = time_pair(s.op, task, base, mine);
      if (base_ms < 0) {
        std::printf("%-64s WRONG: a kernel does not match the reference\n", s.line.c_str());
        return 1;
      }
      ratios.push_back(base_ms / new_ms);
      std::printf("%-64s base %9.3f ms  new %9.3f ms  base/new %.2f%s\n", s.line.c_str(), base_ms, new_ms,
                  base_ms / new_ms, *base == *mine ? " (same pick)" : "");
      std::fflush(stdout);
    }
    std::printf("geomean base/new %.3f over %zu shapes\n", ratios.empty() ? NAN : bench::geomean(ratios),
                ratios.size());
  } catch (const loom::UserError& e) {
    std::fprintf(stderr, "loom_bench_picks: %s\n", e.what());
    return 1;
  }
  return 0;
}
