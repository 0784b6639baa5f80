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
    LoweredFunc f;
    f.name = op_.name;
    f.size_vars = op_.size_vars;
    for (const auto& t : op_.inputs) f.args.push_back(reads_.buffer_for(t));
    for (const auto& t : op_.outputs) f.args.push_back(reads_.buffer_for(t));
    std::vector<Stmt> launches;
    std::vector<BufferRef> temporaries;
    for (const StageSchedule& s : schedule_.stages) {
      const TensorNode* node = s.tensor.get();
      if (s.fused) continue;  // computed in the anchor's write-back
      const std::string name = kernel_name(s.tensor.name(), launches.size());
      if (s.state) {
        const StageSchedule* consumer = fused_consumer(schedule_);
        const te::Tensor& target = consumer ? consumer->tensor : s.tensor;
        if (!reads_.has_buffer(target.get())) temporaries.push_back(reads_.buffer_for(target));
        launches.push_back(tiled(s, consumer, name));
        continue;
      }
      Expr body = reads_.rewrite(node->body);
      if (s.inlined) {
        reads_.inline_stage(node, body);
        continue;
      }
      if (!reads_.has_buffer(node)) temporaries.push_back(reads_.buffer_for(s.tensor));
      launches.push_back(element_kernel(s, body, name));
    }
    Stmt body = make_seq(launches);
    for (auto it = temporaries.rbegin(); it != temporaries.rend(); ++it) body = make_allocate(*it, body);
    f.body = body;
    return f;
  }

 private:
  // A C identifier: the function name, the stage's, and the launch's position (stages may share names).
  std::string kernel_name(const std::string& stage, size_t index) const {
    std::string name = op_.name + "_" + stage + "_" + std::to_string(index);
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
};

}  // namespace

LoweredFunc lower_gpu(const Operator& op, const Schedule& schedule) { return GpuLowerer(op, schedule).run(); }

}  // namespace loom
