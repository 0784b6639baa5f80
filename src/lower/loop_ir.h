// The loop-nest IR that lowering produces and code generators consume.
//
// Statements are immutable nodes. Loops always start at 0 and step by 1; a
// Vectorized loop is executed `lanes` iterations at a time with a scalar
// remainder, a Parallel loop is split into chunks run on the thread pool.
// Buffers are flat: Load/Store take one element offset.
//
// A Prefetch asks the memory system for the line holding one element ahead of
// its use, into L1 or into L2 only: a hint, never a fault or a change in results.
//
// GPU programs use the same nodes plus three: a GpuLaunch is one kernel
// launched over a 1-D grid of blocks of `threads` threads, its body written
// for one thread (block_var and thread_var are its indices); a Barrier
// synchronizes a block's threads; Allocate's scope says where a buffer lives
// (Shared: one copy per block). Outside a launch, a GPU function's body is
// host code: launches in order and the global temporaries between them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expr_nodes.h"

namespace loom {

// Scalar: a serial loop the code generator must not vectorize (one whose
// accesses are strided on one side, where vectors would gather or scatter).
// Transposed: a loop over j whose body is one loop over k around one store,
// dst contiguous along j and its value read along k: copied in blocks of
// `lanes` x `lanes` (vectors along k, transposed in registers, stored along
// j); extents that are not whole blocks run as scalar loops.
enum class ForKind { Serial, Parallel, Vectorized, Unrolled, Scalar, Transposed };
enum class StmtKind { For, Store, Seq, Allocate, IfThenElse, Prefetch, Barrier, GpuLaunch };
// Heap and Stack: CPU scratch (host heap, or the stack when small and constant);
// Heap is device global memory in a GPU program. Shared: a GPU block's shared
// memory; Local: a GPU thread's registers or local memory.
enum class MemScope { Heap, Stack, Shared, Local };

const char* to_string(ForKind kind);

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  StmtKind kind;
  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using Stmt = std::shared_ptr<const StmtNode>;

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, Expr e, ForKind k, int l, Stmt b, int u, bool m)
      : StmtNode(kKind), var(std::move(v)), extent(std::move(e)), for_kind(k), lanes(l), body(std::move(b)),
        unroll_hint(u), masked_remainder(m) {}
  Var var;
  Expr extent;
  ForKind for_kind;
  int lanes;  // Vectorized: vector width; Transposed: block size; otherwise 1
  Stmt body;
  int unroll_hint;  // Serial: partial unroll factor for the code generator (0: none)
  // Vectorized: the last, partial vector runs as one vector with masked
  // loads and stores where the target has them, not as narrower vectors
  // and scalars: row loops, packs and micro-kernels (a register tile's last
  // 15 columns took 8 + 4 + 3 scalar FMAs per step, where masked loads and
  // stores leave one FMA per step: the blend keeping an accumulator's dead
  // lanes folds away, as only its live lanes are ever stored; GEMMs and
  // convolutions with 127 or 255 columns ran at 0.6-0.8x of oneDNN).
  bool masked_remainder;
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  StoreNode(BufferRef b, Expr i, Expr v) : StmtNode(kKind), buffer(std::move(b)), index(std::move(i)), value(std::move(v)) {}
  BufferRef buffer;
  Expr index;
  Expr value;
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  std::vector<Stmt> stmts;
};

// A scratch buffer live for the duration of `body`. Small constant-size
// buffers (register accumulators) live on the stack, where the optimizer
// promotes them to registers; the rest on the heap.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(BufferRef b, Stmt s, MemScope m) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)), scope(m) {}
  BufferRef buffer;
  Stmt body;
  MemScope scope;
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
};

// The element's address may lie past the buffer's end (the rows after a
// tile's last): only its line is asked for, and nothing reads it.
struct PrefetchNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Prefetch;
  PrefetchNode(BufferRef b, Expr i, int c) : StmtNode(kKind), buffer(std::move(b)), index(std::move(i)), cache(c) {}
  BufferRef buffer;
  Expr index;
  int cache = 1;  // the innermost cache level asked to hold the line: 1 (L1) or 2 (L2)
};

struct BarrierNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Barrier;
  BarrierNode() : StmtNode(kKind) {}
};

struct GpuLaunchNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::GpuLaunch;
  GpuLaunchNode(std::string n, Expr g, int t, Var bv, Var tv, Stmt b)
      : StmtNode(kKind), name(std::move(n)), grid(std::move(g)), threads(t), block_var(std::move(bv)),
        thread_var(std::move(tv)), body(std::move(b)) {}
  std::string name;  // the kernel's name in the generated source
  Expr grid;         // blocks, over the function's size variables
  int threads;       // per block
  Var block_var, thread_var;
  Stmt body;
};

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes = 1, int unroll_hint = 0,
              bool masked_remainder = false);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt make_store(BufferRef buffer, Expr index, Expr value);
Stmt make_seq(std::vector<Stmt> stmts);
Stmt make_allocate(BufferRef buffer, Stmt body, MemScope scope = MemScope::Heap);
Stmt make_prefetch(BufferRef buffer, Expr index, int cache = 1);
Stmt make_barrier();
Stmt make_gpu_launch(std::string name, Expr grid, int threads, Var block_var, Var thread_var, Stmt body);
const char* to_string(MemScope scope);

// A lowered kernel: buffer arguments (inputs, then outputs), the symbolic
// sizes it reads, and its body.
struct LoweredFunc {
  std::string name;
  std::vector<BufferRef> args;
  std::vector<Var> size_vars;
  Stmt body;
};

std::string to_text(const Stmt& s);
std::string to_text(const LoweredFunc& f);

}  // namespace loom
