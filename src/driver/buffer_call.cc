#include "driver/buffer_call.h"

namespace loom {

ExpectedBuffers ExpectedBuffers::of(const Operator& op, const SizeBinding& binding) {
  ExpectedBuffers e;
  for (const auto* list : {&op.inputs, &op.outputs})
    for (const te::Tensor& t : *list) {
      e.shapes.push_back(eval_shape(t.shape(), binding));
      e.dtypes.push_back(t.dtype());
    }
  return e;
}

bool ExpectedBuffers::match(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const {
  if (inputs.size() + outputs.size() != shapes.size()) return false;
  auto ok = [&](const Buffer& b, size_t i) {
    return b.data() != nullptr && b.shape() == shapes[i] && b.dtype() == dtypes[i] && b.is_contiguous();
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!ok(inputs[i], i)) return false;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!ok(outputs[i], inputs.size() + i)) return false;
  return true;
}

void call_on_buffers(const codegen::CompiledFunction& fn, ThreadPool& pool, const std::vector<Buffer>& inputs,
                     const std::vector<Buffer>& outputs, const int64_t* sizes) {
  constexpr size_t kInline = 16;
  void* inline_args[kInline];
  std::vector<void*> heap_args;
  const size_t n = inputs.size() + outputs.size();
  void** args = inline_args;
  if (n > kInline) {
    heap_args.resize(n);
    args = heap_args.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) args[i] = inputs[i].data();
  for (size_t i = 0; i < outputs.size(); ++i) args[inputs.size() + i] = outputs[i].data();
  ScopedPool scope(pool);
  fn.call(args, sizes);
}

}  // namespace loom
