#include "lower/loop_ir.h"

#include <sstream>

#include "ir/printer.h"

namespace loom {

const char* to_string(ForKind kind) {
  switch (kind) {
    case ForKind::Serial: return "for";
    case ForKind::Parallel: return "parallel for";
    case ForKind::Vectorized: return "vectorized for";
    case ForKind::Unrolled: return "unrolled for";
  }
  return "?";
}

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes, int unroll_hint) {
  LOOM_INTERNAL_CHECK(kind != ForKind::Vectorized || lanes > 1, "vectorized loop needs lanes > 1");
  LOOM_INTERNAL_CHECK(kind != ForKind::Unrolled || extent.as_const_int(), "unrolled loop needs a constant extent");
  return std::make_shared<ForNode>(std::move(var), std::move(extent), kind, lanes, std::move(body), unroll_hint);
}
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  return std::make_shared<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}
Stmt make_store(BufferRef buffer, Expr index, Expr value) {
  return std::make_shared<StoreNode>(std::move(buffer), std::move(index), std::move(value));
}
Stmt make_seq(std::vector<Stmt> stmts) { return std::make_shared<SeqNode>(std::move(stmts)); }
Stmt make_allocate(BufferRef buffer, Stmt body, bool on_stack) {
  return std::make_shared<AllocateNode>(std::move(buffer), std::move(body), on_stack);
}

namespace {

void print(std::ostream& os, const Stmt& s, int depth) {
  std::string pad(2 * depth, ' ');
  if (auto* f = s->as<ForNode>()) {
    os << pad << to_string(f->for_kind) << " " << f->var.name() << " in [0, " << f->extent.str() << ")";
    if (f->for_kind == ForKind::Vectorized) os << " x" << f->lanes;
    if (f->unroll_hint > 1) os << " unroll " << f->unroll_hint;
    os << ":\n";
    print(os, f->body, depth + 1);
  } else if (auto* st = s->as<StoreNode>()) {
    os << pad << st->buffer->name << "[" << st->index.str() << "] = " << st->value.str() << "\n";
  } else if (auto* seq = s->as<SeqNode>()) {
    for (const Stmt& c : seq->stmts) print(os, c, depth);
  } else if (auto* a = s->as<AllocateNode>()) {
    os << pad << "allocate " << a->buffer->name << "[" << product(a->buffer->shape).str() << "] "
       << a->buffer->dtype.str() << (a->on_stack ? " on stack" : "") << "\n";
    print(os, a->body, depth);
  } else if (auto* i = s->as<IfThenElseNode>()) {
    os << pad << "if " << i->cond.str() << ":\n";
    print(os, i->then_case, depth + 1);
    if (i->else_case) {
      os << pad << "else:\n";
      print(os, i->else_case, depth + 1);
    }
  }
}

}  // namespace

std::string to_text(const Stmt& s) {
  std::ostringstream os;
  print(os, s, 0);
  return os.str();
}

std::string to_text(const LoweredFunc& f) {
  std::ostringstream os;
  os << "func " << f.name << "(";
  for (size_t i = 0; i < f.args.size(); ++i) os << (i ? ", " : "") << f.args[i]->name;
  os << ")\n" << to_text(f.body);
  return os.str();
}

}  // namespace loom
