// compile(): schedule -> lower -> generate code, with timings for reports.
#include <chrono>
#include <functional>

#include "codegen/backend.h"
#include "ir/size_binding.h"
#include "loom/compile.h"
#include "loom/error.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
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

struct Strategy {
  const char* name;
  const char* summary;
  std::function<Schedule(const Operator&, const HwSpec&)> choose;
};

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> all = {
      {"default", "parallel outer loops, vectorized innermost axis, no tiling", default_schedule},
  };
  return all;
}

const Strategy& find_strategy(const std::string& name) {
  for (const Strategy& s : strategies())
    if (name == s.name) return s;
  std::string known;
  for (const Strategy& s : strategies()) known += (known.empty() ? "" : ", ") + std::string(s.name);
  throw UserError("unknown strategy '" + name + "' (known: " + known + ")");
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
  for (const Strategy& s : strategies()) names.push_back(s.name);
  return names;
}

Kernel compile(const Operator& op, const CompileOptions& options) {
  const Strategy& strategy = find_strategy(options.strategy);
  LOOM_USER_CHECK(options.threads >= 0, "threads=", options.threads, " must be non-negative");
  HwSpec target = options.target.name.empty() ? detect_host_cpu() : options.target;
  auto impl = std::make_shared<KernelImpl>();
  impl->op = op;
  impl->threads = options.threads;
  impl->report.strategy = strategy.name;

  auto t0 = std::chrono::steady_clock::now();
  Schedule schedule = strategy.choose(op, target);
  impl->report.construct_ms = elapsed_ms(t0);
  impl->report.schedule = schedule.str();

  auto t1 = std::chrono::steady_clock::now();
  std::unique_ptr<codegen::Backend> backend = codegen::make_backend(target);
  LoweredFunc func = lower(op, schedule);
  impl->report.loop_ir = to_text(func);
  impl->fn = backend->compile(func);
  impl->report.codegen_ms = elapsed_ms(t1);
  return Kernel(impl);
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
