#include "codegen/gpu/gpu_module.h"

#include <sstream>

#include "codegen/gpu/gpu_source.h"
#include "ir/analysis.h"
#include "loom/error.h"

namespace loom::codegen {

namespace {

enum Code : int64_t { kConst, kSize, kAdd, kSub, kMul, kDiv, kMod, kMin, kMax };

void emit(const Expr& e, const std::vector<Var>& vars, std::vector<int64_t>& out) {
  const ExprNode* n = e.get();
  if (auto* i = n->as<IntImmNode>()) {
    out.insert(out.end(), {kConst, i->value});
    return;
  }
  if (n->as<VarNode>()) {
    for (size_t k = 0; k < vars.size(); ++k)
      if (vars[k].get() == n) {
        out.insert(out.end(), {kSize, int64_t(k)});
        return;
      }
    throw InternalError("GPU host program: variable " + n->as<VarNode>()->name + " is not a size");
  }
  auto* b = n->as<BinaryNode>();
  LOOM_INTERNAL_CHECK(b != nullptr, "GPU host program: a size expression that is not integer arithmetic");
  emit(b->a, vars, out);
  emit(b->b, vars, out);
  static const Code codes[] = {kAdd, kSub, kMul, kDiv, kMod, kMin, kMax};
  LOOM_INTERNAL_CHECK(int(b->op) <= int(BinaryOp::Max), "GPU host program: a logical operator in a size");
  out.insert(out.end(), {codes[int(b->op)], 0});
}

void find_stores(const Stmt& s, std::vector<const BufferNode*>& out) {
  if (!s) return;
  if (auto* st = s->as<StoreNode>()) out.push_back(st->buffer.get());
  else if (auto* seq = s->as<SeqNode>()) for (const Stmt& c : seq->stmts) find_stores(c, out);
  else if (auto* f = s->as<ForNode>()) find_stores(f->body, out);
  else if (auto* a = s->as<AllocateNode>()) find_stores(a->body, out);
  else if (auto* i = s->as<IfThenElseNode>()) {
    find_stores(i->then_case, out);
    find_stores(i->else_case, out);
  } else if (auto* g = s->as<GpuLaunchNode>()) find_stores(g->body, out);
}

// A length-prefixed block of text: "<tag> <bytes>\n<body>\n".
void put_block(std::ostream& os, const char* tag, const std::string& body) {
  os << tag << " " << body.size() << "\n" << body << "\n";
}

}  // namespace

SizeProgram SizeProgram::of(const Expr& e, const std::vector<Var>& size_vars) {
  SizeProgram p;
  emit(e, size_vars, p.code_);
  return p;
}

int64_t SizeProgram::eval(const int64_t* sizes) const {
  std::vector<int64_t> stack;
  for (size_t i = 0; i + 1 < code_.size(); i += 2) {
    const int64_t op = code_[i], v = code_[i + 1];
    if (op == kConst) stack.push_back(v);
    else if (op == kSize) stack.push_back(sizes[v]);
    else {
      LOOM_INTERNAL_CHECK(stack.size() >= 2 && op <= kMax, "GPU host program: malformed size program");
      const int64_t y = stack.back();
      stack.pop_back();
      stack.back() = apply_int_op(BinaryOp(op - kAdd), stack.back(), y);
    }
  }
  LOOM_INTERNAL_CHECK(stack.size() == 1, "GPU host program: malformed size program");
  return stack[0];
}

std::string SizeProgram::text() const {
  std::ostringstream os;
  for (size_t i = 0; i < code_.size(); ++i) os << (i ? " " : "") << code_[i];
  return os.str();
}

SizeProgram SizeProgram::parse(const std::string& text) {
  SizeProgram p;
  std::istringstream in(text);
  for (int64_t v; in >> v;) p.code_.push_back(v);
  LOOM_USER_CHECK(p.code_.size() % 2 == 0 && !p.code_.empty(), "GPU module: malformed size program '", text, "'");
  return p;
}

GpuModule GpuModule::from(const LoweredFunc& func) {
  GpuModule m;
  m.name = func.name;
  m.num_sizes = int(func.size_vars.size());
  std::vector<const BufferNode*> stored;
  find_stores(func.body, stored);
  auto plan = [&](const BufferRef& b, bool is_arg) {
    GpuBufferPlan p;
    p.name = b->name;
    p.elements = SizeProgram::of(product(b->shape), func.size_vars);
    p.element_bytes = b->dtype.bytes();
    p.is_arg = is_arg;
    for (const BufferNode* s : stored) p.written |= s == b.get();
    m.buffers.push_back(p);
  };
  for (const BufferRef& b : func.args) plan(b, true);
  for (const BufferRef& b : gpu_temporaries(func)) plan(b, false);
  for (const GpuLaunchNode* g : gpu_launches(func))
    m.launches.push_back({g->name, SizeProgram::of(g->grid, func.size_vars), g->threads});
  m.cuda_source = print_gpu_source(func, GpuDialect::Cuda);
  m.opencl_source = print_gpu_source(func, GpuDialect::OpenCL);
  return m;
}

// Line-oriented: a header of counted records, then length-prefixed blocks of text.
std::string GpuModule::serialize() const {
  std::ostringstream os;
  os << "loom-gpu-module 1\n" << name << "\n" << num_sizes << " " << buffers.size() << " " << launches.size() << "\n";
  for (const GpuBufferPlan& b : buffers)
    os << b.name << " " << b.element_bytes << " " << b.is_arg << " " << b.written << " " << b.elements.text() << "\n";
  for (const GpuLaunchPlan& l : launches) os << l.kernel << " " << l.threads << " " << l.grid.text() << "\n";
  put_block(os, "cuda", cuda_source);
  put_block(os, "opencl", opencl_source);
  return os.str();
}

GpuModule GpuModule::parse(const std::string& bytes) {
  std::istringstream in(bytes);
  auto fail = [](const char* what) { throw UserError(std::string("GPU module: malformed ") + what); };
  std::string magic, line;
  int version = 0;
  if (!(in >> magic >> version) || magic != "loom-gpu-module" || version != 1) fail("header");
  GpuModule m;
  in >> std::ws;
  std::getline(in, m.name);
  size_t nb = 0, nl = 0;
  if (!(in >> m.num_sizes >> nb >> nl) || nb > 4096 || nl > 4096) fail("counts");
  in.ignore(1);
  for (size_t i = 0; i < nb && std::getline(in, line); ++i) {
    std::istringstream ls(line);
    GpuBufferPlan b;
    if (!(ls >> b.name >> b.element_bytes >> b.is_arg >> b.written)) fail("buffer record");
    std::getline(ls, line);
    b.elements = SizeProgram::parse(line);
    m.buffers.push_back(b);
  }
  for (size_t i = 0; i < nl && std::getline(in, line); ++i) {
    std::istringstream ls(line);
    GpuLaunchPlan l;
    if (!(ls >> l.kernel >> l.threads)) fail("launch record");
    std::getline(ls, line);
    l.grid = SizeProgram::parse(line);
    m.launches.push_back(l);
  }
  if (m.buffers.size() != nb || m.launches.size() != nl) fail("records");
  for (std::string* field : {&m.cuda_source, &m.opencl_source}) {
    std::string tag;
    size_t n = 0;
    if (!(in >> tag >> n) || n > bytes.size()) fail("block");
    in.ignore(1);
    field->resize(n);
    if (!in.read(field->data(), std::streamsize(n))) fail("block");
    in.ignore(1);
  }
  return m;
}

}  // namespace loom::codegen
