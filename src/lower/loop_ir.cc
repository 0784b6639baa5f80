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

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes) {
  LOOM_INTERNAL_CHECK(kind != ForKind::Vectorized || lanes > 1, "vectorized loop needs lanes > 1");
  return std::make_shared<ForNode>(std::move(var), std::move(extent), kind, lanes, std::move(body));
}
Stmt make_store(BufferRef buffer, Expr index, Expr value) {
  return std::make_shared<StoreNode>(std::move(buffer), std::move(index), std::move(value));
}
Stmt make_seq(std::vector<Stmt> stmts) { return std::make_shared<SeqNode>(std::move(stmts)); }
Stmt make_allocate(BufferRef buffer, Stmt body) {
  return std::make_shared<AllocateNode>(std::move(buffer), std::move(body));
}

namespace {

void print(std::ostream& os, const Stmt& s, int depth) {
  std::string pad(2 * depth, ' ');
  if (auto* f = s->as<ForNode>()) {
    os << pad << to_string(f->for_kind) << " " << f->var.name() << " in [0, " << f->extent.str() << ")";
    if (f->for_kind == ForKind::Vectorized) os << " x" << f->lanes;
    os << ":\n";
    print(os, f->body, depth + 1);
  } else if (auto* st = s->as<StoreNode>()) {
    os << pad << st->buffer->name << "[" << st->index.str() << "] = " << st->value.str() << "\n";
  } else if (auto* seq = s->as<SeqNode>()) {
    for (const Stmt& c : seq->stmts) print(os, c, depth);
  } else if (auto* a = s->as<AllocateNode>()) {
    os << pad << "allocate " << a->buffer->name << "[" << product(a->buffer->shape).str() << "] "
       << a->buffer->dtype.str() << "\n";
    print(os, a->body, depth);
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
