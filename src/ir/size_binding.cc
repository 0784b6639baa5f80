#include "ir/size_binding.h"

#include <sstream>

#include "ir/expr_nodes.h"

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
