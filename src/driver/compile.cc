// compile(): schedule -> lower -> generate code, with timings for reports.
#include <chrono>
#include <functional>

#include "codegen/backend.h"
#include "ir/size_binding.h"
#include "loom/compile.h"
#include "loom/error.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "driver/compile_schedule.h"
#include "driver/strategy.h"
#include "loom/reference.h"
#include "loom/timing.h"
#include "schedule/schedule.h"

namespace loom {

class KernelImpl {
 public:
  Operator op;
  CompileReport report;
  std::unique_ptr<codegen::CompiledFunction> fn;
  int threads = 0;
};

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// Generated code assumes outputs alias nothing (its buffers are noalias).
void check_no_output_aliasing(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  auto range = [](const Buffer& b) {
    auto* p = static_cast<const char*>(b.data());
    return std::pair{p, p + b.numel() * b.dtype().bytes()};
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    auto [ob, oe] = range(outputs[o]);
    auto overlaps = [&](const Buffer& other) {
      auto [b, e] = range(other);
      return b < oe && ob < e;
    };
    for (size_t i = 0; i < inputs.size(); ++i)
      LOOM_USER_CHECK(!overlaps(inputs[i]), "output #", o, " overlaps input #", i,
                      "; in-place operation is not supported");
    for (size_t j = 0; j < o; ++j)
      LOOM_USER_CHECK(!overlaps(outputs[j]), "output #", o, " overlaps output #", j);
  }
}

}  // namespace

std::vector<std::string> list_strategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table()) names.push_back(s.name);
  return names;
}

Kernel compile_schedule(const Operator& op, const Schedule& schedule, const HwSpec& target, int threads) {
  auto impl = std::make_shared<KernelImpl>();
  impl->op = op;
  impl->threads = threads;
  impl->report.schedule = schedule.str();
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<codegen::Backend> backend = codegen::make_backend(target);
  LoweredFunc func = lower(op, schedule);
  impl->report.loop_ir = to_text(func);
  impl->fn = backend->compile(func);
  impl->report.codegen_ms = elapsed_ms(t0);
  return Kernel(impl);
}

namespace {

// Times a compiled candidate on fixed random inputs: enough runs (at least
// 5 and 20 ms) that noise rarely picks the wrong one of close candidates.
double measure_ms(const Kernel& kernel, const std::vector<Buffer>& inputs, std::vector<Buffer>& outputs) {
  TimingOptions quick;
  quick.warmup = 1;
  quick.repeats = 5;
  quick.min_total_ms = 20;
  quick.max_repeats = 200;
  return time_function([&] { kernel.run(inputs, outputs); }, quick).median_ms;
}

}  // namespace

Kernel compile(const Operator& op, const CompileOptions& options) {
  const StrategyInfo& strategy = find_strategy(options.strategy);
  LOOM_USER_CHECK(options.threads >= 0, "threads=", options.threads, " must be non-negative");
  LOOM_USER_CHECK(options.top_k >= 1 && options.top_k <= 1000, "top_k=", options.top_k, " must be in [1, 1000]");
  LOOM_USER_CHECK(options.walk_steps >= 1, "walk_steps=", options.walk_steps, " must be positive");
  LOOM_USER_CHECK(options.temperature > 0, "temperature=", options.temperature, " must be positive");
  HwSpec target = options.target.name.empty() ? detect_host_cpu() : options.target;

  auto t0 = std::chrono::steady_clock::now();
  std::vector<Candidate> candidates = strategy.candidates(op, target, options);
  const double construct_ms = elapsed_ms(t0);
  LOOM_INTERNAL_CHECK(!candidates.empty(), "strategy ", strategy.name, " produced no candidate");

  size_t best = 0;
  Kernel kept;
  double measure_total = 0;
  int measured = 0;
  if (options.top_k > 1 && candidates.size() > 1) {
    auto t1 = std::chrono::steady_clock::now();
    std::vector<Buffer> inputs = random_inputs(op, 3, std::vector<int64_t>(op.size_vars.size(), 64));
    std::vector<Buffer> outputs;
    for (const auto& shape : output_shapes(op, inputs)) outputs.push_back(Buffer::allocate(shape));
    double best_ms = 0;
    for (size_t i = 0; i < candidates.size() && int(i) < options.top_k; ++i) {
      Kernel k = compile_schedule(op, candidates[i].schedule, target, options.threads);
      double ms = measure_ms(k, inputs, outputs);
      ++measured;
      if (i == 0 || ms < best_ms) {
        best_ms = ms;
        best = i;
        kept = k;
      }
    }
    measure_total = elapsed_ms(t1) - kept.report().codegen_ms;
  } else {
    kept = compile_schedule(op, candidates[0].schedule, target, options.threads);
  }
  CompileReport& report = kept.impl_->report;
  report.strategy = strategy.name;
  report.construct_ms = construct_ms;
  report.measure_ms = measure_total;
  report.measured_candidates = measured;
  report.candidates = int(candidates.size());
  report.predicted_ms = candidates[best].predicted_s * 1e3;
  return kept;
}

namespace {
const KernelImpl& checked(const std::shared_ptr<KernelImpl>& impl) {
  LOOM_USER_CHECK(impl != nullptr, "use of a kernel that was never compiled");
  return *impl;
}
}  // namespace

void Kernel::run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const {
  const Operator& op = checked(impl_).op;
  SizeBinding binding = bind_sizes(op, inputs);
  check_output_shapes(op, outputs, binding);
  check_no_output_aliasing(inputs, outputs);
  std::vector<void*> buffers;
  for (const Buffer& b : inputs) buffers.push_back(b.data());
  for (const Buffer& b : outputs) buffers.push_back(b.data());
  std::vector<int64_t> sizes;
  for (const Var& v : op.size_vars) sizes.push_back(binding.at(v.get()));
  ScopedPool pool(ThreadPool::with_threads(impl_->threads));
  impl_->fn->call(buffers.data(), sizes.data());
}


const Operator& Kernel::op() const { return checked(impl_).op; }
const CompileReport& Kernel::report() const { return checked(impl_).report; }
std::string Kernel::llvm_ir() const { return checked(impl_).fn->ir(); }

std::vector<std::vector<int64_t>> output_shapes(const Operator& op, const std::vector<Buffer>& inputs) {
  SizeBinding binding = bind_sizes(op, inputs);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : op.outputs) shapes.push_back(eval_shape(t.shape(), binding));
  return shapes;
}

}  // namespace loom
