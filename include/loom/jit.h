// Dynamic-shape kernels: one handle per operator, run on any binding of its
// symbolic sizes, with no compile on the caller's critical path after the
// first.
//
//   loom::Operator op = loom::ops::dense(loom::Var("M"), 3072, 768);
//   loom::JitKernel k = loom::jit(op);
//   k.run({x, w}, {y});   // any M; sizes are bound from the buffers
//
// run() finds the bound sizes in a hash table:
//  - a shape whose specialized kernel is ready runs that kernel directly;
//  - any other shape runs at once on a shape-generic kernel: the one of its
//    bucket (every symbolic size rounded up to a power of two, hi; the
//    kernel is constructed for a typical size of (hi/2, hi], 3/4 of hi),
//    or while that one is being compiled the nearest other generic kernel. Only the very first call of a JitKernel
//    waits for a compile (its first generic kernel).
// A miss queues work on the Runtime's background compile threads: the
// bucket's generic kernel, and once the shape has been called
// `specialize_after` times a kernel for that exact shape (construction
// top-1, or the best tuning record when CompileOptions::records names a
// file), swapped in atomically when ready. Compiled code goes to the
// Runtime's disk cache, so a later process serves cached shapes without
// construction or LLVM. Many threads may call run() at once, on the same or
// different shapes, while compiles happen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/buffer.h"
#include "loom/compile.h"
#include "loom/operator.h"

namespace loom {

inline constexpr int kMaxCompileThreads = 64;
inline constexpr int kMaxSymbolicSizes = 8;

struct RuntimeOptions {
  int compile_threads = 1;        // background compile threads, [1, kMaxCompileThreads]
  // CPUs the compile threads may run on (each must be in the process's
  // affinity mask): keep them off the cores the caller's kernels use.
  // Empty: anywhere the process may run.
  std::vector<int> compile_cpus;
  bool disk_cache = true;
  std::string cache_dir;  // empty: $LOOM_CACHE_DIR, else the user's cache home (see README)
  // The kernel cache's size bound: beyond it the least recently used entries go, [1, 1048576].
  int64_t cache_max_mb = 1024;
};

struct JitOptions {
  CompileOptions compile;        // strategy, target, threads, construction settings, records (top_k must be 1)
  int specialize_after = 1;      // calls of a shape before its specialization is queued, [1, 1e9]
  int max_specialized = 64;      // specialized shapes kept (least recently used evicted), [0, 1e6]; 0: none
  // false: misses compile their specialized kernel on the calling thread
  // (recompile-per-shape, as Inductor-style runtimes do; for comparison).
  bool background = true;
};

// Which kernel served a call.
enum class ServedBy { Generic, Specialized, Disk };  // Disk: specialized, loaded from the disk cache
const char* to_string(ServedBy s);

struct JitStats {
  int64_t calls = 0;
  int compiles_on_critical_path = 0;  // compiles (or cache loads) a run() waited for
  int background_compiles = 0;        // kernels built by compile threads (LLVM ran)
  int disk_loads = 0;                 // kernels loaded from the disk cache (no LLVM)
  int llvm_compiles = 0;              // every kernel LLVM compiled, wherever
  int specialized_ready = 0;          // specialized kernels held now
  int evictions = 0;
  int failed = 0;                     // builds that failed (the shape keeps its generic kernel)
  // The longest a call on an unseen shape spent before its kernel started
  // (checks, disk-cache probe, queueing), compiles it waited for excluded.
  double miss_overhead_max_ms = 0;
  std::vector<std::string> warnings;  // corrupt cache entries, failed builds
};

// What time_dispatch() measured (below).
struct DispatchTiming {
  double run_ns = 0;
  double direct_ns = 0;
  double overhead_ns() const { return run_ns - direct_ns; }
};

class JitKernelImpl;
class RuntimeImpl;

class JitKernel {
 public:
  JitKernel() = default;
  explicit JitKernel(std::shared_ptr<JitKernelImpl> impl) : impl_(std::move(impl)) {}

  // Runs on buffers matching the operator's inputs and outputs (as
  // Kernel::run, with the same checks and errors); says what served it.
  ServedBy run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const;
  // Blocks until the background work this kernel queued has finished.
  void wait_idle() const;
  JitStats stats() const;
  const Operator& op() const;
  // The schedule of the kernel that serves `sizes` (op.size_vars order)
  // now, printed; empty when the shape has not been seen.
  std::string schedule_for(const std::vector<int64_t>& sizes) const;

 private:
  friend DispatchTiming time_dispatch(const JitKernel&, const std::vector<Buffer>&, const std::vector<Buffer>&, int);
  std::shared_ptr<JitKernelImpl> impl_;
};

// Owns the compile threads and the kernel caches. A Runtime's kernels keep
// working after it is destroyed (queued compiles are dropped).
class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Nothing is compiled here. UserError for options out of range, a
  // top_k above 1, or more than kMaxSymbolicSizes symbolic sizes.
  JitKernel jit(const Operator& op, const JitOptions& options = {});
  // Blocks until every queued compile has finished.
  void wait_idle();
  const std::string& cache_dir() const;  // empty when the disk cache is off

  // The process's runtime: default options, created on first use.
  static Runtime& global();

 private:
  void stop_compiling();  // drops queued compiles, waits for running ones
  std::shared_ptr<RuntimeImpl> impl_;
};

// Runtime::global().jit(op, options).
JitKernel jit(const Operator& op, const JitOptions& options = {});

// The cost of dispatch: medians per call of k.run() on a shape it has
// seen, and of calling the code that serves that shape directly, timed in
// interleaved batches on the calling thread. UserError when the shape has
// not been run yet.
DispatchTiming time_dispatch(const JitKernel& k, const std::vector<Buffer>& inputs,
                             const std::vector<Buffer>& outputs, int batches = 101);

}  // namespace loom
