// GPU lowering: one kernel launch per materialized stage, in producer order,
// global temporaries between them. The anchor stage under a state is the
// tiled kernel (gpu_tiled_kernel.h); every other stage runs one thread per
// output element, its reduction (if any) serial in the thread.
#include <algorithm>

#include "lower/gpu/gpu_tiled_kernel.h"
#include "ir/analysis.h"
#include "lower/lower.h"
#include "lower/stage_reads.h"
#include "schedule/anchor.h"

namespace loom {

namespace {

// Threads per block of the element-wise kernels: a multiple of every warp size in use, and allowed everywhere.
constexpr int kElementThreads = 256;

class GpuLowerer {
 public:
  GpuLowerer(const Operator& op, const Schedule& schedule) : op_(op), schedule_(schedule) {}

  LoweredFunc run() {
    LoweredFunc f = function_signature(op_, reads_);
    StageBuilders build;
    build.tiled = [this](const StageSchedule& s, const StageSchedule* consumer) {
      return tiled(s, consumer, kernel_name(s.tensor.name()));
    };
    build.materialized = [this](const StageSchedule& s, const Expr& body) {
      return element_kernel(s, body, kernel_name(s.tensor.name()));
    };
    f.body = lower_stage_by_stage(schedule_, reads_, build);
    return f;
  }

 private:
  // A C identifier: the function name, the stage's, and the launch's position (stages may share names).
  std::string kernel_name(const std::string& stage) {
    std::string name = op_.name + "_" + stage + "_" + std::to_string(launches_++);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return "loom_" + name;
  }

  Stmt tiled(const StageSchedule& s, const StageSchedule* consumer, const std::string& name) {
    LOOM_INTERNAL_CHECK(schedule_.anchor != nullptr, "a tiled stage without its anchor analysis");
    LOOM_INTERNAL_CHECK(s.state->target == TargetKind::Gpu, "a CPU state in a GPU schedule");
    GpuTiledInputs in;
    in.anchor = schedule_.anchor.get();
    in.state = s.state.get();
    in.reads = &reads_;
    in.out = reads_.buffer_for(consumer ? consumer->tensor : s.tensor);
    if (consumer) in.epilogue = reads_.epilogue(consumer->tensor, s.tensor);
    in.name = name;
    in.banks = schedule_.gpu_banks;
    return lower_gpu_tiled_kernel(in);
  }

  // One thread per output element: its coordinates from the global thread index.
  Stmt element_kernel(const StageSchedule& s, const Expr& body, const std::string& name) {
    const TensorNode* node = s.tensor.get();
    Var block("block"), thread("thread");
    const Expr total = product(node->shape);
    const Expr i = Expr(block) * kElementThreads + Expr(thread);
    const std::vector<Expr> coords = unflatten_index(i, node->shape);
    VarMap at;
    for (size_t d = 0; d < node->axes.size(); ++d) at[node->axes[d].get()] = coords[d];
    BufferRef out = reads_.buffer_for(s.tensor);
    Stmt compute;
    if (auto* red = body.get()->as<ReduceNode>()) {
      auto acc = std::make_shared<BufferNode>(BufferNode{node->name + "_acc", red->dtype, {make_int(1)}});
      Stmt update = make_store(acc, make_int(0), reduce_combine(red->op, make_load(acc, make_int(0)),
                                                                 substitute(red->source, at)));
      for (auto it = red->axes.rbegin(); it != red->axes.rend(); ++it)
        update = make_for(it->var, it->extent, ForKind::Serial, update);
      compute = make_allocate(acc, make_seq({make_store(acc, make_int(0), reduce_identity(red->op, red->dtype)), update,
                                             make_store(out, i, make_load(acc, make_int(0)))}),
                              MemScope::Local);
    } else {
      compute = make_store(out, i, substitute(body, at));
    }
    const Expr grid = (total + (kElementThreads - 1)) / kElementThreads;
    return make_gpu_launch(name, grid, kElementThreads, block, thread, make_if(i < total, compute));
  }

  const Operator& op_;
  const Schedule& schedule_;
  StageReads reads_;
  size_t launches_ = 0;
};

}  // namespace

LoweredFunc lower_gpu(const Operator& op, const Schedule& schedule) { return GpuLowerer(op, schedule).run(); }

}  // namespace loom
