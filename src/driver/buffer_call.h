// What Kernel::run and the dynamic-shape runtime share on the hot path: the
// quick check of buffers against shapes validated before, and the call of
// compiled code on them without allocating.
#pragma once

#include <vector>

#include "codegen/backend.h"
#include "ir/size_binding.h"
#include "loom/buffer.h"
#include "loom/operator.h"
#include "runtime/thread_pool.h"

namespace loom {

// The buffers an operator takes under one binding of its sizes.
struct ExpectedBuffers {
  std::vector<std::vector<int64_t>> shapes;  // inputs, then outputs
  std::vector<DType> dtypes;

  static ExpectedBuffers of(const Operator& op, const SizeBinding& binding);
  // True when the buffers have exactly these shapes and dtypes, are
  // contiguous and non-empty; false sends the caller to the full checks,
  // which name what is wrong.
  bool match(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const;
};

// Calls `fn` on the buffers' data (inputs, then outputs) with `sizes`, on `pool`.
void call_on_buffers(const codegen::CompiledFunction& fn, ThreadPool& pool, const std::vector<Buffer>& inputs,
                     const std::vector<Buffer>& outputs, const int64_t* sizes);

}  // namespace loom
