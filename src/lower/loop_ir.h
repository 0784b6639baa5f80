// The loop-nest IR that lowering produces and code generators consume.
//
// Statements are immutable nodes. Loops always start at 0 and step by 1; a
// Vectorized loop is executed `lanes` iterations at a time with a scalar
// remainder, a Parallel loop is split into chunks run on the thread pool.
// Buffers are flat: Load/Store take one element offset.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expr_nodes.h"

namespace loom {

enum class ForKind { Serial, Parallel, Vectorized, Unrolled };
enum class StmtKind { For, Store, Seq, Allocate, IfThenElse };

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
  ForNode(Var v, Expr e, ForKind k, int l, Stmt b, int u)
      : StmtNode(kKind), var(std::move(v)), extent(std::move(e)), for_kind(k), lanes(l), body(std::move(b)),
        unroll_hint(u) {}
  Var var;
  Expr extent;
  ForKind for_kind;
  int lanes;  // Vectorized: vector width; otherwise 1
  Stmt body;
  int unroll_hint;  // Serial: partial unroll factor for the code generator (0: none)
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
  AllocateNode(BufferRef b, Stmt s, bool stack)
      : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)), on_stack(stack) {}
  BufferRef buffer;
  Stmt body;
  bool on_stack;
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
};

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes = 1, int unroll_hint = 0);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt make_store(BufferRef buffer, Expr index, Expr value);
Stmt make_seq(std::vector<Stmt> stmts);
Stmt make_allocate(BufferRef buffer, Stmt body, bool on_stack = false);

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
