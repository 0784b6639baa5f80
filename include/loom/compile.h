// Compiling an operator into a callable kernel, and running it.
//
// compile() takes an Operator and a target (a HwSpec) and a strategy name
// that decides how the schedule is chosen ("default": a simple parallel +
// vectorized schedule; construction and search strategies plug in under the
// same name). It lowers, generates code in process and returns a Kernel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/buffer.h"
#include "loom/hwspec.h"
#include "loom/operator.h"

namespace loom {

// Ranges of the options; compile() and tune() reject a value outside them
// with a UserError naming it. A thread count above the CPUs this process may
// run on (its affinity mask) is clamped to them, with a note in the report.
inline constexpr int kMaxThreads = 4096;
inline constexpr int kMaxTopK = 100;
inline constexpr int kMaxWalkSteps = 20000;
// Construction's walk budget by default. Over 90 benchmark shapes, the walk's
// best state after 400 steps was within 4% of its best after 500, a fifth of
// the time saved, and the top-1 picks that moved ran as fast or faster, timed
// side by side: 3 moved on an AVX-512 host (1.0-1.2x faster), 9 under its
// AVX2 spec (1.03x, geomean). At 350 steps a GEMV's pick (1x4096x1000) fell
// to one 1.4x slower, which the model rates within 1% of it.
inline constexpr int kDefaultWalkSteps = 400;

// The CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

struct CompileOptions {
  std::string strategy = "construct";  // construct | roller | default (see loom strategies)
  HwSpec target;    // empty name: detect the host
  int threads = 0;  // parallel workers when running, [0, kMaxThreads]; 0 or above usable_cpus(): all usable CPUs
  // Construction strategies: how many candidates to emit. With top_k > 1
  // each is compiled, run and timed, and the fastest kept.
  int top_k = 1;             // [1, kMaxTopK]
  int walk_steps = kDefaultWalkSteps;  // Markov walk budget (construct), [1, kMaxWalkSteps]
  double temperature = 0.3;  // of the transition softmax (construct)
  uint64_t seed = 1;         // walks are deterministic for a seed
  // A tuning records file (see loom/tune.h): when it holds a correct
  // measurement of this operator on this hwspec, its fastest schedule is
  // compiled without construction or measurement; otherwise the strategy
  // runs as usual and the report's note says so.
  std::string records;
};

// What compile() did, for reports.
struct CompileReport {
  std::string strategy;
  double construct_ms = 0;  // choosing the candidate schedules
  double codegen_ms = 0;    // lowering + code generation + JIT of the kept kernel
  double measure_ms = 0;    // compiling and timing the other candidates
  int measured_candidates = 0;
  int candidates = 0;       // emitted by the strategy
  double predicted_ms = 0;  // the analytic model's estimate for the kept schedule (0: none)
  std::string schedule;     // the chosen schedule, printed
  std::string loop_ir;      // the lowered loop nest, printed
  bool from_records = false;  // the schedule came from a records file
  std::string note;           // e.g. why records did not apply
};

class KernelImpl;

class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<KernelImpl> impl) : impl_(std::move(impl)) {}

  // Runs on buffers matching the operator's inputs and outputs, in order.
  // Symbolic sizes are bound from the buffer shapes. Throws UserError naming
  // the buffer and the expected shape on any mismatch.
  void run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const;

  const Operator& op() const;
  const CompileReport& report() const;
  // Textual LLVM IR of the optimized module (for inspection); for a GPU target, the CUDA C.
  std::string llvm_ir() const;
  // The generated kernel source alone: LLVM IR for a CPU target, CUDA C for
  // a GPU one (`opencl`: its OpenCL C twin), ready for nvcc or any OpenCL.
  std::string source(bool opencl = false) const;
  // Where run() executes: "cpu" for a CPU target; for a GPU target, where
  // the last run went: "cuda" on a CUDA device, else "opencl-cpu" (PoCL: the
  // kernels' OpenCL twin, for checking without a GPU) or "opencl-gpu"; empty
  // before the first run.
  std::string executed_on() const;

 private:
  friend class KernelAccess;
  std::shared_ptr<KernelImpl> impl_;
};

std::vector<std::string> list_strategies();
Kernel compile(const Operator& op, const CompileOptions& options = {});

// Output shapes of `op` once its symbolic sizes are bound from `inputs`.
std::vector<std::vector<int64_t>> output_shapes(const Operator& op,
                                                const std::vector<Buffer>& inputs);
// Fresh zero-filled buffers of those shapes.
std::vector<Buffer> allocate_outputs(const Operator& op, const std::vector<Buffer>& inputs);

}  // namespace loom
