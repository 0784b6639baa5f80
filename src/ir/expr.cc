// Expression construction with light constant folding, so index arithmetic
// built by operators and lowering stays readable and analysable.
#include <cmath>
#include <limits>

#include "ir/expr_nodes.h"
#include "ir/printer.h"

namespace loom {

std::string DType::str() const {
  switch (code) {
    case TypeCode::Float: return "f" + std::to_string(bits);
    case TypeCode::Int: return "i" + std::to_string(bits);
    case TypeCode::UInt: return "u" + std::to_string(bits);
    case TypeCode::Bool: return "bool";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  if (name == "f32" || name == "float32") return DType::f32();
  if (name == "f64" || name == "float64") return DType::f64();
  if (name == "i32" || name == "int32") return DType::i32();
  if (name == "i64" || name == "int64") return DType::i64();
  if (name == "bool") return DType::boolean();
  throw UserError("unknown dtype '" + name + "' (expected f32, f64, i32, i64 or bool)");
}

const char* to_string(BinaryOp op) {
  static const char* names[] = {"+", "-", "*", "/", "%", "min", "max", "&&", "||"};
  return names[static_cast<int>(op)];
}
const char* to_string(UnaryOp op) {
  static const char* names[] = {"-", "!", "exp", "log", "tanh", "erf", "sqrt", "rsqrt", "abs"};
  return names[static_cast<int>(op)];
}
const char* to_string(CompareOp op) {
  static const char* names[] = {"<", "<=", ">", ">=", "==", "!="};
  return names[static_cast<int>(op)];
}
CompareOp mirrored(CompareOp op) {
  switch (op) {
    case CompareOp::LT: return CompareOp::GT;
    case CompareOp::LE: return CompareOp::GE;
    case CompareOp::GT: return CompareOp::LT;
    case CompareOp::GE: return CompareOp::LE;
    default: return op;
  }
}
const char* to_string(ReduceOp op) {
  static const char* names[] = {"sum", "max", "min"};
  return names[static_cast<int>(op)];
}

Expr::Expr(int v) : Expr(make_int(v)) {}
Expr::Expr(int64_t v) : Expr(make_int(v)) {}
Expr::Expr(float v) : Expr(make_float(v)) {}
Expr::Expr(double v) : Expr(make_float(v)) {}

DType Expr::dtype() const {
  LOOM_INTERNAL_CHECK(defined(), "dtype() of an undefined Expr");
  return node_->dtype;
}

std::optional<int64_t> Expr::as_const_int() const {
  if (auto* imm = node_ ? node_->as<IntImmNode>() : nullptr) return imm->value;
  return std::nullopt;
}

std::string Expr::str() const { return to_text(*this); }

Var::Var(const std::string& name, DType type) : Expr(std::make_shared<VarNode>(type, name)) {}
Var Var::from(const Expr& var_expr) {
  LOOM_USER_CHECK(var_expr.defined() && var_expr.get()->kind == ExprKind::Var, "expected a variable, got ",
                  var_expr.defined() ? var_expr.str() : "undefined");
  Var v("");
  static_cast<Expr&>(v) = var_expr;
  return v;
}

const std::string& Var::name() const { return get()->as<VarNode>()->name; }

Expr make_int(int64_t v) { return Expr(std::make_shared<IntImmNode>(DType::i64(), v)); }
Expr make_float(double v, DType t) { return Expr(std::make_shared<FloatImmNode>(t, v)); }

namespace {

std::optional<double> const_float(const Expr& e) {
  if (auto* f = e.get()->as<FloatImmNode>()) return f->value;
  return std::nullopt;
}


// An immediate mixed with a value of another type takes that type, so
// `x * 2` and `x + 0.5f` read naturally; any other mismatch is a user error.
void unify_types(Expr& a, Expr& b, const char* what) {
  LOOM_USER_CHECK(a.defined() && b.defined(), "operand of '", what, "' is undefined");
  if (a.dtype() == b.dtype()) return;
  auto retype = [](const Expr& imm, DType to) -> std::optional<Expr> {
    if (auto i = imm.as_const_int()) return to.is_float() ? make_float(double(*i), to) : std::optional<Expr>();
    if (auto f = const_float(imm); f && to.is_float()) return make_float(*f, to);
    return std::nullopt;
  };
  if (auto r = retype(b, a.dtype())) { b = *r; return; }
  if (auto r = retype(a, b.dtype())) { a = *r; return; }
  throw UserError(detail::concat("operands of '", what, "' have different types: ", a.str(), " is ",
                                 a.dtype().str(), ", ", b.str(), " is ", b.dtype().str()));
}

Expr checked(bool overflowed, const int64_t& result, int64_t x, int64_t y, const char* sym) {
  LOOM_USER_CHECK(!overflowed, "integer overflow computing ", x, " ", sym, " ", y, ": sizes are too large");
  return make_int(result);
}

std::optional<Expr> fold_int(BinaryOp op, const Expr& a, const Expr& b) {
  auto x = a.as_const_int(), y = b.as_const_int();
  if (x && y) {
    int64_t r = 0;
    switch (op) {
      case BinaryOp::Add: return checked(__builtin_add_overflow(*x, *y, &r), r, *x, *y, "+");
      case BinaryOp::Sub: return checked(__builtin_sub_overflow(*x, *y, &r), r, *x, *y, "-");
      case BinaryOp::Mul: return checked(__builtin_mul_overflow(*x, *y, &r), r, *x, *y, "*");
      case BinaryOp::Div:
      case BinaryOp::Mod:
        LOOM_USER_CHECK(*y != 0, "division by zero in ", a.str(), " ", to_string(op), " 0");
        return make_int(apply_int_op(op, *x, *y));
      case BinaryOp::Min:
      case BinaryOp::Max: return make_int(apply_int_op(op, *x, *y));
      default: return std::nullopt;
    }
  }
  switch (op) {
    case BinaryOp::Add:
      if (x == 0) return b;
      if (y == 0) return a;
      break;
    case BinaryOp::Sub:
      if (y == 0) return a;
      break;
    case BinaryOp::Mul:
      if (x == 1) return b;
      if (y == 1) return a;
      if (x == 0 || y == 0) return make_int(0);
      break;
    case BinaryOp::Div:
      if (y == 1) return a;
      break;
    case BinaryOp::Mod:
      if (y == 1) return make_int(0);
      break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace

int64_t apply_int_op(BinaryOp op, int64_t x, int64_t y) {
  auto wrap = [](uint64_t v) { return int64_t(v); };
  switch (op) {
    case BinaryOp::Add: return wrap(uint64_t(x) + uint64_t(y));
    case BinaryOp::Sub: return wrap(uint64_t(x) - uint64_t(y));
    case BinaryOp::Mul: return wrap(uint64_t(x) * uint64_t(y));
    case BinaryOp::Div:
    case BinaryOp::Mod: {
      LOOM_INTERNAL_CHECK(y != 0, "integer division by zero");
      int64_t q = x / y;
      if (x % y != 0 && ((x < 0) != (y < 0))) --q;
      return op == BinaryOp::Div ? q : x - q * y;
    }
    case BinaryOp::Min: return std::min(x, y);
    case BinaryOp::Max: return std::max(x, y);
    default: break;
  }
  throw InternalError(std::string("not an integer arithmetic op: ") + to_string(op));
}

Expr make_binary(BinaryOp op, Expr a, Expr b) {
  unify_types(a, b, to_string(op));
  DType t = a.dtype();
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    LOOM_USER_CHECK(t.is_bool(), "operands of '", to_string(op), "' must be conditions, got ", a.str());
  } else {
    LOOM_USER_CHECK(!t.is_bool(), "arithmetic '", to_string(op), "' on a condition: ", a.str());
  }
  if (t.is_int()) {
    if (auto folded = fold_int(op, a, b)) return *folded;
  }
  return Expr(std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b)));
}

Expr make_unary(UnaryOp op, Expr a) {
  LOOM_USER_CHECK(a.defined(), "operand of '", to_string(op), "' is undefined");
  if (op == UnaryOp::Not) {
    LOOM_USER_CHECK(a.dtype().is_bool(), "'!' needs a condition, got ", a.str());
  } else if (op != UnaryOp::Neg && op != UnaryOp::Abs) {
    LOOM_USER_CHECK(a.dtype().is_float(), to_string(op), "() needs a float operand, got ", a.str(),
                    " of type ", a.dtype().str());
  }
  if (op == UnaryOp::Neg) {
    if (auto i = a.as_const_int()) return make_int(-*i);
  }
  return Expr(std::make_shared<UnaryNode>(a.dtype(), op, std::move(a)));
}

Expr make_compare(CompareOp op, Expr a, Expr b) {
  unify_types(a, b, to_string(op));
  return Expr(std::make_shared<CompareNode>(op, std::move(a), std::move(b)));
}

Expr make_load(BufferRef buffer, Expr index) {
  return Expr(std::make_shared<LoadNode>(std::move(buffer), std::move(index)));
}

Expr make_reduce(ReduceOp op, Expr source, std::vector<te::IterVar> axes) {
  LOOM_USER_CHECK(source.defined(), "reduction of an undefined expression");
  LOOM_USER_CHECK(!axes.empty(), to_string(op), "() needs at least one reduction axis");
  LOOM_USER_CHECK(source.dtype().is_float() || source.dtype().is_int(), to_string(op),
                  "() over a non-numeric expression ", source.str());
  return Expr(std::make_shared<ReduceNode>(op, std::move(source), std::move(axes)));
}

Expr reduce_identity(ReduceOp op, DType type) {
  switch (op) {
    case ReduceOp::Sum: return type.is_float() ? make_float(0.0, type) : make_int(0);
    case ReduceOp::Max: return lowest(type);
    case ReduceOp::Min: return highest(type);
  }
  throw InternalError("unknown reduce op");
}

Expr reduce_combine(ReduceOp op, const Expr& a, const Expr& b) {
  return op == ReduceOp::Sum ? a + b : op == ReduceOp::Max ? max(a, b) : min(a, b);
}

Expr product(const std::vector<Expr>& dims) {
  Expr p = make_int(1);
  for (const Expr& d : dims) p = make_binary(BinaryOp::Mul, p, d);
  return p;
}

Expr flatten_index(const std::vector<Expr>& indices, const std::vector<Expr>& shape) {
  LOOM_INTERNAL_CHECK(indices.size() == shape.size(), "rank mismatch flattening an index");
  Expr flat = make_int(0);
  for (size_t i = 0; i < indices.size(); ++i) flat = flat * shape[i] + indices[i];
  return flat;
}

std::vector<Expr> unflatten_index(const Expr& flat, const std::vector<Expr>& shape) {
  std::vector<Expr> indices(shape.size());
  Expr rest = flat;
  for (size_t d = shape.size(); d-- > 0;) {
    indices[d] = d == 0 ? rest : rest % shape[d];
    if (d > 0) rest = rest / shape[d];
  }
  return indices;
}

Expr operator+(Expr a, Expr b) { return make_binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return make_binary(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return make_binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return make_binary(BinaryOp::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return make_binary(BinaryOp::Mod, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return make_unary(UnaryOp::Neg, std::move(a)); }
Expr operator<(Expr a, Expr b) { return make_compare(CompareOp::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return make_compare(CompareOp::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return make_compare(CompareOp::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return make_compare(CompareOp::GE, std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return make_compare(CompareOp::EQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return make_compare(CompareOp::NE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return make_binary(BinaryOp::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return make_binary(BinaryOp::Or, std::move(a), std::move(b)); }

Expr min(Expr a, Expr b) { return make_binary(BinaryOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return make_binary(BinaryOp::Max, std::move(a), std::move(b)); }

Expr select(Expr cond, Expr then_value, Expr else_value) {
  LOOM_USER_CHECK(cond.defined() && cond.dtype().is_bool(), "select() condition must be a comparison, got ",
                  cond.defined() ? cond.str() : "undefined");
  unify_types(then_value, else_value, "select");
  return Expr(std::make_shared<SelectNode>(std::move(cond), std::move(then_value), std::move(else_value)));
}

Expr cast(DType type, Expr value) {
  LOOM_USER_CHECK(value.defined(), "cast of an undefined expression");
  if (value.dtype() == type) return value;
  if (auto i = value.as_const_int(); i && type.is_float()) return make_float(double(*i), type);
  return Expr(std::make_shared<CastNode>(type, std::move(value)));
}

Expr exp(Expr x) { return make_unary(UnaryOp::Exp, std::move(x)); }
Expr log(Expr x) { return make_unary(UnaryOp::Log, std::move(x)); }
Expr tanh(Expr x) { return make_unary(UnaryOp::Tanh, std::move(x)); }
Expr erf(Expr x) { return make_unary(UnaryOp::Erf, std::move(x)); }
Expr sqrt(Expr x) { return make_unary(UnaryOp::Sqrt, std::move(x)); }
Expr rsqrt(Expr x) { return make_unary(UnaryOp::Rsqrt, std::move(x)); }
Expr abs(Expr x) { return make_unary(UnaryOp::Abs, std::move(x)); }

Expr lowest(DType type) {
  if (type.is_float())
    return make_float(type.bits == 64 ? std::numeric_limits<double>::lowest()
                                      : double(std::numeric_limits<float>::lowest()), type);
  return make_int(std::numeric_limits<int64_t>::lowest());
}

Expr highest(DType type) {
  if (type.is_float())
    return make_float(type.bits == 64 ? std::numeric_limits<double>::max()
                                      : double(std::numeric_limits<float>::max()), type);
  return make_int(std::numeric_limits<int64_t>::max());
}

}  // namespace loom
