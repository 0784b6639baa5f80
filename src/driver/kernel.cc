// Kernels: a compiled function with its operator, run on checked buffers.
#include <chrono>
#include <optional>

#include "codegen/backend.h"
#include "driver/buffer_call.h"
#include "driver/compile_schedule.h"
#include "ir/size_binding.h"
#include "loom/error.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "support/checked.h"

namespace loom {

class KernelImpl {
 public:
  Operator op;
  CompileReport report;
  std::unique_ptr<codegen::CompiledFunction> fn;
  int threads = 0;
  ThreadPool* pool = nullptr;
  std::optional<ExpectedBuffers> fixed;  // the buffers of an operator without symbolic sizes
};

namespace {
const KernelImpl& checked(const std::shared_ptr<KernelImpl>& impl);
}  // namespace

class KernelAccess {
 public:
  static CompileReport& report(Kernel& k) { return k.impl_->report; }
  static const KernelImpl& impl(const Kernel& k) { return checked(k.impl_); }
};

namespace {

const KernelImpl& checked(const std::shared_ptr<KernelImpl>& impl) {
  LOOM_USER_CHECK(impl != nullptr, "use of a kernel that was never compiled");
  return *impl;
}

}  // namespace

Kernel compile_schedule(const Operator& op, const Schedule& schedule, const HwSpec& target, int threads) {
  auto impl = std::make_shared<KernelImpl>();
  impl->op = op;
  impl->threads = threads;
  impl->pool = &ThreadPool::with_threads(threads);
  if (op.size_vars.empty()) impl->fixed = ExpectedBuffers::of(op, SizeBinding{});
  impl->report.schedule = schedule.str();
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<codegen::Backend> backend = codegen::make_backend(target);
  LoweredFunc func = lower(op, schedule);
  impl->report.loop_ir = to_text(func);
  impl->fn = backend->compile(func);
  impl->report.codegen_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Kernel(impl);
}

CompileReport& mutable_report(Kernel& kernel) { return KernelAccess::report(kernel); }

double device_kernel_ms(const Kernel& kernel, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs,
                        int repeats) {
  const KernelImpl& k = KernelAccess::impl(kernel);
  SizeBinding binding = bind_sizes(k.op, inputs);
  check_output_shapes(k.op, outputs, binding);
  std::vector<int64_t> sizes;
  for (const Var& v : k.op.size_vars) sizes.push_back(binding.at(v.get()));
  std::vector<void*> pointers;
  for (const auto& list : {inputs, outputs})
    for (const Buffer& b : list) pointers.push_back(b.data());
  return k.fn->time_on_device(pointers.data(), sizes.data(), repeats);
}

void Kernel::run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const {
  const KernelImpl& k = checked(impl_);
  if (k.fixed && k.fixed->match(inputs, outputs)) {  // the hot path: no allocation, no size evaluation
    check_no_output_aliasing(inputs, outputs);
    call_on_buffers(*k.fn, *k.pool, inputs, outputs, nullptr);
    return;
  }
  SizeBinding binding = bind_sizes(k.op, inputs);
  check_output_shapes(k.op, outputs, binding);
  check_no_output_aliasing(inputs, outputs);
  std::vector<int64_t> sizes;
  for (const Var& v : k.op.size_vars) sizes.push_back(binding.at(v.get()));
  call_on_buffers(*k.fn, *k.pool, inputs, outputs, sizes.data());
}

const Operator& Kernel::op() const { return checked(impl_).op; }
const CompileReport& Kernel::report() const { return checked(impl_).report; }
std::string Kernel::llvm_ir() const { return checked(impl_).fn->ir(); }
std::string Kernel::source(bool opencl) const { return checked(impl_).fn->source(opencl); }
std::string Kernel::executed_on() const { return checked(impl_).fn->executed_on(); }

std::vector<std::vector<int64_t>> output_shapes(const Operator& op, const std::vector<Buffer>& inputs) {
  SizeBinding binding = bind_sizes(op, inputs);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : op.outputs) shapes.push_back(eval_shape(t.shape(), binding));
  return shapes;
}

std::vector<Buffer> allocate_outputs(const Operator& op, const std::vector<Buffer>& inputs) {
  std::vector<Buffer> outputs;
  for (const auto& shape : output_shapes(op, inputs)) outputs.push_back(Buffer::allocate(shape));
  return outputs;
}

}  // namespace loom
