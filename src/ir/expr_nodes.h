// Expression nodes behind the public Expr / te::Tensor handles.
//
// Nodes are immutable plain structs; identity of a Var, a tensor or a buffer
// is its node's address. The same node set serves the tensor-expression level
// (TensorRead: multi-dimensional access to a te::Tensor) and the loop IR
// (Load: flat access to a lowered buffer), as in Halide, so analyses written
// once work at both levels. Children are listed in one place
// (children()/with_children() in expr.cc): visitors and rewriters built on
// them never need a per-kind dispatch chain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/error.h"
#include "loom/expr.h"
#include "loom/te.h"

namespace loom {

enum class ExprKind { IntImm, FloatImm, Var, Binary, Unary, Compare, Select, Cast, TensorRead, Reduce, Load };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Min, Max, And, Or };
enum class UnaryOp { Neg, Not, Exp, Log, Tanh, Erf, Sqrt, Rsqrt, Abs };
enum class CompareOp { LT, LE, GT, GE, EQ, NE };
enum class ReduceOp { Sum, Max, Min };

const char* to_string(BinaryOp op);
const char* to_string(UnaryOp op);
const char* to_string(CompareOp op);
const char* to_string(ReduceOp op);
// The comparison with its operands swapped: a < b as b > a.
CompareOp mirrored(CompareOp op);

struct ExprNode {
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
  ExprKind kind;
  DType dtype;

  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  int64_t value;
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
  double value;
};

struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(DType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
  std::string name;
};

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinaryNode(DType t, BinaryOp o, Expr x, Expr y) : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
  BinaryOp op;
  Expr a, b;
};

struct UnaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryNode(DType t, UnaryOp o, Expr x) : ExprNode(kKind, t), op(o), a(std::move(x)) {}
  UnaryOp op;
  Expr a;
};

struct CompareNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Compare;
  CompareNode(CompareOp o, Expr x, Expr y) : ExprNode(kKind, DType::boolean()), op(o), a(std::move(x)), b(std::move(y)) {}
  CompareOp op;
  Expr a, b;
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.dtype()), cond(std::move(c)), then_value(std::move(t)), else_value(std::move(f)) {}
  Expr cond, then_value, else_value;
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  CastNode(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  Expr value;
};

}  // namespace loom

namespace loom::te {
struct TensorNode {
  std::string name;
  std::vector<Expr> shape;
  DType dtype;
  bool is_placeholder = true;
  std::vector<Var> axes;  // compute only: one per output dimension
  Expr body;              // compute only
};
}  // namespace loom::te

namespace loom {
using te::TensorNode;

struct TensorReadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::TensorRead;
  TensorReadNode(te::Tensor t, std::vector<Expr> idx)
      : ExprNode(kKind, t.dtype()), tensor(std::move(t)), indices(std::move(idx)) {}
  te::Tensor tensor;
  std::vector<Expr> indices;
};

struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  ReduceNode(ReduceOp o, Expr s, std::vector<te::IterVar> ax)
      : ExprNode(kKind, s.dtype()), op(o), source(std::move(s)), axes(std::move(ax)) {}
  ReduceOp op;
  Expr source;
  std::vector<te::IterVar> axes;
};

// A buffer of the loop IR: a tensor after lowering, or a scratch buffer.
struct BufferNode {
  std::string name;
  DType dtype;
  std::vector<Expr> shape;  // row-major; the flat size is their product
  // No element a masked vector leaves dead (ForNode::masked_remainder) is
  // live in this buffer at any time, as in a micro-kernel's accumulators,
  // whose rows along the vector axis are whole vectors: a store may write
  // the dead lanes rather than keep them.
  bool dead_lanes_free = false;
};
using BufferRef = std::shared_ptr<const BufferNode>;

struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  LoadNode(BufferRef buf, Expr idx) : ExprNode(kKind, buf->dtype), buffer(std::move(buf)), index(std::move(idx)) {}
  BufferRef buffer;
  Expr index;  // flat element offset
};

// The integer meaning of an arithmetic op: floor division and modulo,
// wrapping add/sub/mul. The one definition shared by constant folding,
// size binding and the reference executor.
int64_t apply_int_op(BinaryOp op, int64_t x, int64_t y);

// The meaning of a comparison of two values of one type (integers exactly,
// reals as C++ compares doubles): the one definition shared by the
// reference executor and lowering's conditions known when compiling.
template <typename T>
bool apply_compare(CompareOp op, T x, T y) {
  switch (op) {
    case CompareOp::LT: return x < y;
    case CompareOp::LE: return x <= y;
    case CompareOp::GT: return x > y;
    case CompareOp::GE: return x >= y;
    case CompareOp::EQ: return x == y;
    case CompareOp::NE: return x != y;
  }
  throw InternalError("unknown comparison");
}

// Construction helpers (with the same folding as the public operators).
Expr make_int(int64_t v);
Expr make_float(double v, DType t = DType::f32());
Expr make_binary(BinaryOp op, Expr a, Expr b);
Expr make_unary(UnaryOp op, Expr a);
Expr make_compare(CompareOp op, Expr a, Expr b);
Expr make_load(BufferRef buffer, Expr index);
Expr make_reduce(ReduceOp op, Expr source, std::vector<te::IterVar> axes);
// The identity element of a reduction in `type` (0, lowest, highest).
Expr reduce_identity(ReduceOp op, DType type);
// Two partial results of a reduction combined: a + b, max or min.
Expr reduce_combine(ReduceOp op, const Expr& a, const Expr& b);
// The product of `dims` (1 for none), folded when constant.
Expr product(const std::vector<Expr>& dims);
// Row-major flat offset of `indices` into a tensor of `shape`.
Expr flatten_index(const std::vector<Expr>& indices, const std::vector<Expr>& shape);
// Its inverse: the indices of row-major offset `flat` into `shape` (the
// first index is not reduced modulo its extent).
std::vector<Expr> unflatten_index(const Expr& flat, const std::vector<Expr>& shape);

}  // namespace loom
