#include "ir/size_binding.h"

#include <functional>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "ir/analysis.h"
#include "ir/expr_nodes.h"
#include "support/checked.h"

namespace loom {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::string shape_text(const std::vector<Expr>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i].str();
  os << "]";
  return os.str();
}

void check_buffer(const te::Tensor& t, const Buffer& b, const char* role, size_t index,
                  const SizeBinding& binding) {
  std::vector<int64_t> want = eval_shape(t.shape(), binding);
  LOOM_USER_CHECK(b.data() != nullptr, role, " #", index, " ('", t.name(), "') is an empty buffer");
  LOOM_USER_CHECK(b.dtype() == t.dtype(), role, " #", index, " ('", t.name(), "') has dtype ", b.dtype().str(),
                  " but the operator expects ", t.dtype().str());
  LOOM_USER_CHECK(b.shape() == want, role, " #", index, " ('", t.name(), "') has shape ", shape_text(b.shape()),
                  " but the operator expects ", shape_text(want), " = ", shape_text(t.shape()));
  LOOM_USER_CHECK(b.is_contiguous(), role, " #", index, " ('", t.name(),
                  "') is not contiguous; pass a row-major buffer");
}

}  // namespace

int64_t eval_int(const Expr& e, const SizeBinding& binding) {
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::IntImm: return n->as<IntImmNode>()->value;
    case ExprKind::Var: {
      auto it = binding.find(n);
      LOOM_INTERNAL_CHECK(it != binding.end(), "size variable '", n->as<VarNode>()->name, "' is unbound");
      return it->second;
    }
    case ExprKind::Binary: {
      auto* b = n->as<BinaryNode>();
      return apply_int_op(b->op, eval_int(b->a, binding), eval_int(b->b, binding));
    }
    default: break;
  }
  throw InternalError("eval_int: not an integer size expression: " + e.str());
}

std::vector<int64_t> eval_shape(const std::vector<Expr>& shape, const SizeBinding& binding) {
  std::vector<int64_t> out;
  for (const Expr& d : shape) out.push_back(eval_int(d, binding));
  return out;
}

SizeBinding bind_sizes(const Operator& op, const std::vector<int64_t>& values) {
  LOOM_USER_CHECK(values.size() == op.size_vars.size(), op.name, " has ", op.size_vars.size(),
                  " symbolic sizes but ", values.size(), " values were given");
  SizeBinding b;
  for (size_t i = 0; i < values.size(); ++i) {
    LOOM_USER_CHECK(values[i] > 0, "size ", op.size_vars[i].name(), "=", values[i], " must be positive");
    b[op.size_vars[i].get()] = values[i];
  }
  return b;
}

SizeBinding bind_sizes(const Operator& op, const std::vector<Buffer>& inputs) {
  LOOM_USER_CHECK(inputs.size() == op.inputs.size(), op.name, " takes ", op.inputs.size(), " inputs, got ",
                  inputs.size());
  SizeBinding binding;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& shape = op.inputs[i].shape();
    LOOM_USER_CHECK(inputs[i].shape().size() == shape.size(), "input #", i, " ('", op.inputs[i].name(),
                    "') has ", inputs[i].shape().size(), " dimensions but the operator expects ", shape.size(),
                    " ", shape_text(shape));
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d].get()->kind == ExprKind::Var && !binding.count(shape[d].get())) {
        LOOM_USER_CHECK(inputs[i].shape()[d] > 0, "input #", i, " ('", op.inputs[i].name(), "') dimension ", d,
                        " must be positive, got ", inputs[i].shape()[d]);
        binding[shape[d].get()] = inputs[i].shape()[d];
      }
  }
  for (const Var& v : op.size_vars)
    LOOM_USER_CHECK(binding.count(v.get()), "size '", v.name(), "' of ", op.name,
                    " is not the extent of any input dimension");
  for (size_t i = 0; i < inputs.size(); ++i) check_buffer(op.inputs[i], inputs[i], "input", i, binding);
  return binding;
}

void check_output_shapes(const Operator& op, const std::vector<Buffer>& outputs, const SizeBinding& binding) {
  LOOM_USER_CHECK(outputs.size() == op.outputs.size(), op.name, " has ", op.outputs.size(), " outputs, got ",
                  outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) check_buffer(op.outputs[i], outputs[i], "output", i, binding);
}

}  // namespace loom

namespace loom {

namespace {

// Rebuilds tensors bottom-up with `vars` substituted, memoised so shared
// producers stay shared.
class SizeSubstitution {
 public:
  explicit SizeSubstitution(VarMap vars) : vars_(std::move(vars)) {}

  te::Tensor tensor(const te::Tensor& t) {
    if (auto it = done_.find(t.get()); it != done_.end()) return it->second;
    auto node = std::make_shared<TensorNode>(*t.get());
    for (Expr& d : node->shape) d = expr(d);
    if (!node->is_placeholder) node->body = expr(node->body);
    te::Tensor rebuilt(std::move(node));
    done_[t.get()] = rebuilt;
    return rebuilt;
  }

  Expr expr(const Expr& e) {
    return transform(e, [&](const Expr& x) -> std::optional<Expr> {
      if (x.get()->kind == ExprKind::Var) {
        auto it = vars_.find(x.get());
        return it == vars_.end() ? std::nullopt : std::optional<Expr>(it->second);
      }
      if (auto* r = x.get()->as<TensorReadNode>()) return tensor(r->tensor)(r->indices);
      return std::nullopt;
    });
  }

 private:
  VarMap vars_;
  std::unordered_map<const TensorNode*, te::Tensor> done_;
};

void structure_of(const te::Tensor& t, std::unordered_set<const TensorNode*>& seen, std::string& out) {
  if (!seen.insert(t.get()).second) return;
  const TensorNode* n = t.get();
  if (!n->is_placeholder)
    visit(n->body, [&](const Expr& e) {
      if (auto* r = e.get()->as<TensorReadNode>()) structure_of(r->tensor, seen, out);
      return true;
    });
  out += n->name + shape_text(n->shape) + " " + n->dtype.str();
  if (!n->is_placeholder) {
    out += " (";
    for (size_t i = 0; i < n->axes.size(); ++i) out += (i ? ", " : "") + n->axes[i].name();
    out += ") = " + n->body.str();
  }
  out += "\n";
}

}  // namespace

Operator with_sizes(const Operator& op, const std::vector<int64_t>& values) {
  SizeBinding binding = bind_sizes(op, values);
  VarMap vars;
  for (const auto& [var, value] : binding) vars[var] = make_int(value);
  SizeSubstitution sub(std::move(vars));
  Operator out = op;
  for (te::Tensor& t : out.inputs) t = sub.tensor(t);
  for (te::Tensor& t : out.outputs) t = sub.tensor(t);
  out.flops = sub.expr(op.flops);
  for (size_t i = 0; i < op.size_vars.size(); ++i)
    if (auto it = out.params.find(op.size_vars[i].name()); it != out.params.end()) it->second = std::to_string(values[i]);
  out.size_vars.clear();
  return out;
}

std::string structure_text(const Operator& op) {
  std::unordered_set<const TensorNode*> seen;
  std::string out = op.name + "\n";
  for (const te::Tensor& t : op.inputs) structure_of(t, seen, out);
  for (const te::Tensor& t : op.outputs) structure_of(t, seen, out);
  for (const Var& v : op.size_vars) out += "size " + v.name() + "\n";
  return out;
}

void check_operator_sizes(const Operator& op) {
  LOOM_USER_CHECK(!op.outputs.empty(), "operator '", op.name, "' has no outputs");
  std::unordered_set<const ExprNode*> listed;
  for (const Var& v : op.size_vars) listed.insert(v.get());
  std::unordered_set<const TensorNode*> seen;
  std::function<void(const te::Tensor&)> check = [&](const te::Tensor& t) {
    if (!seen.insert(t.get()).second) return;
    for (const Expr& d : t.shape())
      visit(d, [&](const Expr& e) {
        LOOM_USER_CHECK(e.get()->kind != ExprKind::Var || listed.count(e.get()), "operator '", op.name, "': size '",
                        e.str(), "' in the shape of tensor '", t.name(),
                        "' is not among its size_vars (te::build_operator derives them)");
        return true;
      });
    if (!t.is_placeholder())
      visit(t.get()->body, [&](const Expr& e) {
        if (auto* r = e.get()->as<TensorReadNode>()) check(r->tensor);
        return true;
      });
  };
  for (const te::Tensor& t : op.inputs) check(t);
  for (const te::Tensor& t : op.outputs) check(t);
}

void check_no_output_aliasing(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  auto range = [](const Buffer& b) {
    const auto p = reinterpret_cast<uintptr_t>(b.data());
    const int64_t bytes = checked_mul(b.numel(), b.dtype().bytes(), "the byte size of a buffer");
    uintptr_t end = 0;
    LOOM_USER_CHECK(!__builtin_add_overflow(p, uintptr_t(bytes), &end), "a buffer of ", bytes,
                    " bytes does not fit in the address space after its start");
    return std::pair{p, end};
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    auto [ob, oe] = range(outputs[o]);
    auto overlaps = [&](const Buffer& other) {
      auto [b, e] = range(other);
      return b < oe && ob < e;
    };
    for (size_t i = 0; i < inputs.size(); ++i)
      LOOM_USER_CHECK(!overlaps(inputs[i]), "output #", o, " overlaps input #", i,
                      "; in-place operation is not supported");
    for (size_t j = 0; j < o; ++j)
      LOOM_USER_CHECK(!overlaps(outputs[j]), "output #", o, " overlaps output #", j);
  }
}

}  // namespace loom
