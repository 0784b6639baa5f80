// libFuzzer target: operator construction and planning. The input picks an
// operator from the registry and its integer parameters (small and awkward
// sizes, zero, negative and huge ones); the operator is built, its memory
// estimated, its anchor analysed and construction's first states made.
// Only UserErrors may come out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/loom.h"
#include "schedule/path.h"
#include "schedule/schedule.h"
#include "schedule/task.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& ops = loom::list_operators();
  const loom::OperatorInfo& info = ops[data[0] % ops.size()];
  std::map<std::string, std::string> params;
  size_t at = 1;
  for (const loom::ParamSpec& p : info.params) {
    if (at >= size) break;
    const uint8_t b = data[at++];
    if (p.kind == loom::ParamKind::Choice) {
      params[p.name] = p.choices[b % p.choices.size()];
    } else {
      // Mostly small sizes, sometimes zero, negative or beyond the range.
      const int64_t v = b < 200 ? int64_t(b % 40) : b < 230 ? int64_t(b) * 977 : b < 250 ? -int64_t(b) : int64_t(1) << (b - 220);
      params[p.name] = std::to_string(v);
    }
  }
  try {
    loom::Operator op = loom::make_operator(info.name, params);
    (void)loom::run_memory_bytes(op);
    loom::Task task = loom::make_task(op, loom::load_hwspec("skylake_avx512"), 1);
    (void)loom::schedule_with_state(task, loom::initial_state(*task.anchor, task.target));
  } catch (const loom::UserError&) {
  }
  return 0;
}
