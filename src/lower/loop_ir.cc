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
    case ForKind::Scalar: return "scalar for";
    case ForKind::Transposed: return "transposed for";
  }
  return "?";
}

Stmt make_for(Var var, Expr extent, ForKind kind, Stmt body, int lanes, int unroll_hint, bool masked_remainder) {
  LOOM_INTERNAL_CHECK((kind != ForKind::Vectorized && kind != ForKind::Transposed) || lanes > 1,
                      "vectorized or transposed loop needs lanes > 1");
  LOOM_INTERNAL_CHECK(kind != ForKind::Unrolled || extent.as_const_int(), "unrolled loop needs a constant extent");
  return std::make_shared<ForNode>(std::move(var), std::move(extent), kind, lanes, std::move(body), unroll_hint,
                                   masked_remainder);
}
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  return std::make_shared<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}
Stmt make_store(BufferRef buffer, Expr index, Expr value) {
  return std::make_shared<StoreNode>(std::move(buffer), std::move(index), std::move(value));
}
Stmt make_seq(std::vector<Stmt> stmts) { return std::make_shared<SeqNode>(std::move(stmts)); }
Stmt make_allocate(BufferRef buffer, Stmt body, MemScope scope) {
  return std::make_shared<AllocateNode>(std::move(buffer), std::move(body), scope);
}
Stmt make_prefetch(BufferRef buffer, Expr index, int cache) {
  LOOM_INTERNAL_CHECK(cache == 1 || cache == 2, "prefetch into cache level ", cache);
  return std::make_shared<PrefetchNode>(std::move(buffer), std::move(index), cache);
}
Stmt make_barrier() { return std::make_shared<BarrierNode>(); }
Stmt make_gpu_launch(std::string name, Expr grid, int threads, Var block_var, Var thread_var, Stmt body) {
  LOOM_INTERNAL_CHECK(threads >= 1, "a GPU launch needs at least one thread per block");
  return std::make_shared<GpuLaunchNode>(std::move(name), std::move(grid), threads, std::move(block_var),
                                         std::move(thread_var), std::move(body));
}

const char* to_string(MemScope scope) {
  switch (scope) {
    case MemScope::Heap: return "heap";
    case MemScope::Stack: return "stack";
    case MemScope::Shared: return "shared";
    case MemScope::Local: return "local";
  }
  return "?";
}

namespace {

void print(std::ostream& os, const Stmt& s, int depth) {
  std::string pad(2 * depth, ' ');
  if (auto* f = s->as<ForNode>()) {
    os << pad << to_string(f->for_kind) << " " << f->var.name() << " in [0, " << f->extent.str() << ")";
    if (f->for_kind == ForKind::Vectorized) os << " x" << f->lanes << (f->masked_remainder ? " masked" : "");
    if (f->unroll_hint > 1) os << " unroll " << f->unroll_hint;
    os << ":\n";
    print(os, f->body, depth + 1);
  } else if (auto* st = s->as<StoreNode>()) {
    os << pad << st->buffer->name << "[" << st->index.str() << "] = " << st->value.str() << "\n";
  } else if (auto* seq = s->as<SeqNode>()) {
    for (const Stmt& c : seq->stmts) print(os, c, depth);
  } else if (auto* a = s->as<AllocateNode>()) {
    os << pad << "allocate " << a->buffer->name << "[" << product(a->buffer->shape).str() << "] "
       << a->buffer->dtype.str() << " " << to_string(a->scope) << (a->buffer->dead_lanes_free ? " dead-lanes-free" : "")
       << "\n";
    print(os, a->body, depth);
  } else if (auto* p = s->as<PrefetchNode>()) {
    os << pad << "prefetch " << (p->cache == 2 ? "to L2 " : "") << p->buffer->name << "[" << p->index.str() << "]\n";
  } else if (s->as<BarrierNode>()) {
    os << pad << "barrier\n";
  } else if (auto* g = s->as<GpuLaunchNode>()) {
    os << pad << "launch " << g->name << " grid " << g->grid.str() << " x " << g->threads << " threads ("
       << g->block_var.name() << ", " << g->thread_var.name() << "):\n";
    print(os, g->body, depth + 1);
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
