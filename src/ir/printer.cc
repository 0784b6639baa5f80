#include "ir/printer.h"

#include <sstream>

#include "ir/expr_nodes.h"

namespace loom {

namespace {

void print(std::ostream& os, const Expr& e);

void print_list(std::ostream& os, const std::vector<Expr>& xs) {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) os << ", ";
    print(os, xs[i]);
  }
}

void print(std::ostream& os, const Expr& e) {
  if (!e.defined()) {
    os << "<undefined>";
    return;
  }
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::IntImm: os << n->as<IntImmNode>()->value; return;
    case ExprKind::FloatImm: os << n->as<FloatImmNode>()->value << "f"; return;
    case ExprKind::Var: os << n->as<VarNode>()->name; return;
    case ExprKind::Binary: {
      auto* b = n->as<BinaryNode>();
      if (b->op == BinaryOp::Min || b->op == BinaryOp::Max) {
        os << to_string(b->op) << "(";
        print(os, b->a);
        os << ", ";
        print(os, b->b);
        os << ")";
      } else {
        os << "(";
        print(os, b->a);
        os << " " << to_string(b->op) << " ";
        print(os, b->b);
        os << ")";
      }
      return;
    }
    case ExprKind::Unary: {
      auto* u = n->as<UnaryNode>();
      os << to_string(u->op) << "(";
      print(os, u->a);
      os << ")";
      return;
    }
    case ExprKind::Compare: {
      auto* c = n->as<CompareNode>();
      os << "(";
      print(os, c->a);
      os << " " << to_string(c->op) << " ";
      print(os, c->b);
      os << ")";
      return;
    }
    case ExprKind::Select: {
      auto* s = n->as<SelectNode>();
      os << "select(";
      print_list(os, {s->cond, s->then_value, s->else_value});
      os << ")";
      return;
    }
    case ExprKind::Cast: os << n->dtype.str() << "("; print(os, n->as<CastNode>()->value); os << ")"; return;
    case ExprKind::TensorRead: {
      auto* r = n->as<TensorReadNode>();
      os << r->tensor.name() << "[";
      print_list(os, r->indices);
      os << "]";
      return;
    }
    case ExprKind::Reduce: {
      auto* r = n->as<ReduceNode>();
      os << to_string(r->op) << "(";
      print(os, r->source);
      os << ", over ";
      for (size_t i = 0; i < r->axes.size(); ++i) {
        if (i) os << ", ";
        os << r->axes[i].var.name() << " < ";
        print(os, r->axes[i].extent);
      }
      os << ")";
      return;
    }
    case ExprKind::Load: {
      auto* l = n->as<LoadNode>();
      os << l->buffer->name << "[";
      print(os, l->index);
      os << "]";
      return;
    }
  }
}

}  // namespace

std::string to_text(const Expr& e) {
  std::ostringstream os;
  print(os, e);
  return os.str();
}

}  // namespace loom
