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
enum class StmtKind { For, Store, Seq, Allocate };

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
  ForNode(Var v, Expr e, ForKind k, int l, Stmt b)
      : StmtNode(kKind), var(std::move(v)), extent(std::move(e)), for_kind(k), lanes(l), body(std::move(b)) {}
  Var var;
  Expr extent;
  ForKind for_kind;
  int lanes;  // Vectorized: vector width; otherwise 1
  Stmt body;
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

// A scratch buffer live for the duration of `body`.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(BufferRef b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
  BufferRef buffer;
  Stmt body;
};

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes = 1);
Stmt make_store(BufferRef buffer, Expr index, Expr value);
Stmt make_seq(std::vector<Stmt> stmts);
Stmt make_allocate(BufferRef buffer, Stmt body);

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
