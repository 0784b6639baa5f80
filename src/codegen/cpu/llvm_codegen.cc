#include "codegen/cpu/llvm_codegen.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "codegen/cpu/vector_math.h"
#include "ir/analysis.h"

namespace loom::codegen {

namespace {

using llvm::BasicBlock;
using llvm::Function;
using llvm::Type;
using llvm::Value;

constexpr unsigned kElementAlign = 4;

// Whether code for `cpu` may use `feature`: the spec lists it and this
// host, which runs the JIT's code, has it (target_features(), where a later
// entry overrides an earlier one, as in LLVM: "+avx2,...,-avx2" is off).
bool target_has(const CpuSpec& cpu, llvm::StringRef feature) {
  const std::string features = target_features(cpu);
  llvm::SmallVector<llvm::StringRef, 64> listed;
  llvm::StringRef(features).split(listed, ',');
  bool on = false;
  for (llvm::StringRef f : listed)
    if (f.drop_front() == feature) on = f.startswith("+");
  return on;
}

// Emits statements and expressions into one function at a time. Outlining a
// parallel loop starts a fresh FunctionEmitter for the task body.
class FunctionEmitter {
 public:
  FunctionEmitter(llvm::Module& m, const CpuSpec& cpu)
      : m_(m), ctx_(m.getContext()), b_(ctx_), cpu_(cpu),
        isa_{target_has(cpu, "avx2"), target_has(cpu, "avx512f")},
        masked_loads_(isa_.avx512 || target_has(cpu, "avx")) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    fmf.setAllowReassoc(true);
    fmf.setAllowReciprocal(true);  // x / y as x * (1 / y): a row divided by one value pays one division
    b_.setFastMathFlags(fmf);
  }

  // Emits `body` as the whole of function `fn`, whose parameters are bound
  // to `buffers` then `vars` (then optionally begin/end of a parallel chunk).
  void emit_function(Function* fn, const std::vector<const BufferNode*>& buffers,
                     const std::vector<const ExprNode*>& vars, const Stmt& body) {
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    auto arg = fn->arg_begin();
    for (const BufferNode* buf : buffers) bufs_[buf] = &*arg++;
    for (const ExprNode* v : vars) vars_[v] = &*arg++;
    stmt(body);
    b_.CreateRetVoid();
  }

  void emit_parallel_chunk(Function* fn, const std::vector<const BufferNode*>& buffers,
                           const std::vector<const ExprNode*>& vars, const ForNode* loop) {
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    auto arg = fn->arg_begin();
    for (const BufferNode* buf : buffers) bufs_[buf] = &*arg++;
    for (const ExprNode* v : vars) vars_[v] = &*arg++;
    Value* begin = &*arg++;
    Value* end = &*arg++;
    in_parallel_ = true;
    counted_loop(loop->var.get(), begin, end, 1, [&] { stmt(loop->body); });
    b_.CreateRetVoid();
  }

 private:
  // ---- types and small helpers ----
  Type* scalar_type(DType t) {
    if (t.is_bool()) return b_.getInt1Ty();
    if (t.is_float()) return t.bits == 64 ? b_.getDoubleTy() : b_.getFloatTy();
    return b_.getIntNTy(t.bits);
  }
  static bool is_vec(Value* v) { return v->getType()->isVectorTy(); }
  Value* splat(Value* v, int lanes) { return is_vec(v) || lanes == 1 ? v : b_.CreateVectorSplat(lanes, v); }
  // The lane count an expression evaluates to in the current context.
  int lanes_of(const Expr& e) const { return lanes_ > 1 && !scalarize_ && uses_var(e, vec_var_) ? lanes_ : 1; }
  void match(Value*& a, Value*& b) {
    if (is_vec(a) && !is_vec(b)) b = splat(b, lanes_);
    if (is_vec(b) && !is_vec(a)) a = splat(a, lanes_);
  }
  Value* all_true() { return llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes_)); }
  Function* intrinsic(llvm::Intrinsic::ID id, Type* t) { return llvm::Intrinsic::getDeclaration(&m_, id, {t}); }

  // A loop variable bound for a scope: what it shadowed is restored after.
  class ScopedVar {
   public:
    ScopedVar(std::unordered_map<const ExprNode*, Value*>& vars, const ExprNode* var)
        : vars_(vars), var_(var), saved_(vars.count(var) ? vars.at(var) : nullptr) {}
    ScopedVar(const ScopedVar&) = delete;
    ScopedVar& operator=(const ScopedVar&) = delete;
    ~ScopedVar() {
      if (saved_) vars_[var_] = saved_; else vars_.erase(var_);
    }

   private:
    std::unordered_map<const ExprNode*, Value*>& vars_;
    const ExprNode* var_;
    Value* saved_;
  };

  // ---- statements ----
  void stmt(const Stmt& s) {
    if (auto* f = s->as<ForNode>()) return loop(f);
    if (auto* st = s->as<StoreNode>()) return store(st);
    if (auto* seq = s->as<SeqNode>()) {
      for (const Stmt& c : seq->stmts) stmt(c);
      return;
    }
    if (auto* a = s->as<AllocateNode>()) return allocate(a);
    if (auto* i = s->as<IfThenElseNode>()) return if_then_else(i);
    if (auto* p = s->as<PrefetchNode>()) return prefetch(p);
    throw InternalError("codegen: unknown statement");
  }

  // A read prefetch into every cache level (locality 3), or into L2 and out
  // (locality 2). The address is computed without `inbounds`: it may lie
  // past the buffer.
  void prefetch(const PrefetchNode* n) {
    Value* index = expr(n->index);
    LOOM_INTERNAL_CHECK(!is_vec(index), "prefetch index varies across vector lanes: ", n->index.str());
    Value* ptr = b_.CreateGEP(scalar_type(n->buffer->dtype), bufs_.at(n->buffer.get()), index);
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr->getType()},
                       {ptr, b_.getInt32(0), b_.getInt32(n->cache == 1 ? 3 : 2), b_.getInt32(1)});
  }

  void if_then_else(const IfThenElseNode* n) {
    Value* cond = expr(n->cond);
    LOOM_INTERNAL_CHECK(!is_vec(cond), "if condition varies across vector lanes: ", n->cond.str());
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* then_bb = BasicBlock::Create(ctx_, "if_then", fn);
    BasicBlock* else_bb = n->else_case ? BasicBlock::Create(ctx_, "if_else", fn) : nullptr;
    BasicBlock* merge = BasicBlock::Create(ctx_, "if_end", fn);
    b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : merge);
    b_.SetInsertPoint(then_bb);
    stmt(n->then_case);
    b_.CreateBr(merge);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      stmt(n->else_case);
      b_.CreateBr(merge);
    }
    b_.SetInsertPoint(merge);
  }

  // Replicates the body once per iteration with the variable a constant.
  void unrolled_loop(const ForNode* f) {
    const int64_t n = *f->extent.as_const_int();
    const ExprNode* var = f->var.get();
    const ScopedVar scoped(vars_, var);
    if (const ForNode* vector = one_vector_of_stores(f->body)) {
      // Copies of one full vector of stores (a register tile's row of an element-wise nest): in batches, as
      // a vectorized loop's (stores_after_loads).
      const ExprNode* lane = vector->var.get();
      const ScopedVar scoped_lane(vars_, lane);
      vars_[lane] = b_.getInt64(0);
      vec_var_ = lane;
      lanes_ = vector->lanes;
      for (int64_t i = 0; i < n; i += kLoadBatch)
        stores_after_loads(vector->body->as<StoreNode>(), std::min<int64_t>(kLoadBatch, n - i),
                           [&](int64_t c) { vars_[var] = b_.getInt64(i + c); });
      lanes_ = 1;
      vec_var_ = nullptr;
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      vars_[var] = b_.getInt64(i);
      stmt(f->body);
    }
  }

  // `s` when it is one full vector (a vectorized loop of exactly its lanes) of a store whose loads can lead it.
  const ForNode* one_vector_of_stores(const Stmt& s) const {
    const ForNode* f = s ? s->as<ForNode>() : nullptr;
    if (!f || f->for_kind != ForKind::Vectorized || lanes_ != 1 || !loads_can_lead_stores(f)) return nullptr;
    const auto extent = f->extent.as_const_int();
    return extent && *extent == f->lanes && f->lanes > 1 ? f : nullptr;
  }

  // for (var = begin; var < end; var += step) body(); `unroll`: > 1 a count for
  // LLVM's unroller, < 0 none, 0 LLVM's choice; `vectorize`: whether LLVM's
  // loop vectorizer may.
  template <typename Body>
  void counted_loop(const ExprNode* var, Value* begin, Value* end, int64_t step, Body body, int unroll = 0,
                    bool vectorize = true) {
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* header = BasicBlock::Create(ctx_, "loop", fn);
    BasicBlock* inside = BasicBlock::Create(ctx_, "body", fn);
    BasicBlock* exit = BasicBlock::Create(ctx_, "exit", fn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2);
    iv->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), inside, exit);
    b_.SetInsertPoint(inside);
    const ScopedVar scoped(vars_, var);
    vars_[var] = iv;
    body();
    Value* next = b_.CreateAdd(iv, b_.getInt64(step), "", /*HasNUW=*/false, /*HasNSW=*/true);
    iv->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* back = b_.CreateBr(header);
    if (unroll != 0 || !vectorize) {
      llvm::LLVMContext& c = ctx_;
      llvm::Metadata* hint[] = {llvm::MDString::get(c, "llvm.loop.unroll.count"),
                                llvm::ConstantAsMetadata::get(b_.getInt32(unroll))};
      llvm::Metadata* disable[] = {llvm::MDString::get(c, "llvm.loop.unroll.disable")};
      llvm::Metadata* scalar[] = {llvm::MDString::get(c, "llvm.loop.vectorize.enable"),
                                  llvm::ConstantAsMetadata::get(b_.getFalse())};
      auto* self = llvm::MDNode::getTemporary(c, {}).release();
      std::vector<llvm::Metadata*> ops = {self};
      if (unroll != 0) ops.push_back(unroll > 1 ? llvm::MDNode::get(c, hint) : llvm::MDNode::get(c, disable));
      if (!vectorize) ops.push_back(llvm::MDNode::get(c, scalar));
      llvm::MDNode* loop_id = llvm::MDNode::get(c, ops);
      loop_id->replaceOperandWith(0, loop_id);
      llvm::MDNode::deleteTemporary(self);
      back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(exit);
  }

  void loop(const ForNode* f) {
    if (f->for_kind == ForKind::Unrolled) return unrolled_loop(f);
    Value* extent = expr(f->extent);
    LOOM_INTERNAL_CHECK(!is_vec(extent), "loop extent varies across vector lanes: ", f->extent.str());
    if (f->for_kind == ForKind::Parallel && !in_parallel_) return parallel_loop(f, extent);
    if (f->for_kind == ForKind::Vectorized && lanes_ == 1) return vectorized_loop(f, extent);
    if (f->for_kind == ForKind::Transposed && lanes_ == 1 && transposed_loop(f, extent)) return;
    // A loop around a register tile is unrolled as the schedule says and no
    // further: unrolled by LLVM, a window's reduction loop would share input
    // loads between its copies and keep them live beside the accumulators
    // (spills on a 16-register file that the schedule's tile fits).
    const int unroll = f->unroll_hint > 1 ? f->unroll_hint : wraps_unrolled_loop(f->body) ? -1 : 0;
    counted_loop(f->var.get(), b_.getInt64(0), extent, 1, [&] { stmt(f->body); }, unroll,
                 f->for_kind != ForKind::Scalar && f->for_kind != ForKind::Transposed);
  }

  static bool wraps_unrolled_loop(const Stmt& s) {
    if (!s) return false;
    if (auto* f = s->as<ForNode>()) return f->for_kind == ForKind::Unrolled || wraps_unrolled_loop(f->body);
    if (auto* seq = s->as<SeqNode>())
      return std::any_of(seq->stmts.begin(), seq->stmts.end(), [](const Stmt& c) { return wraps_unrolled_loop(c); });
    if (auto* a = s->as<AllocateNode>()) return wraps_unrolled_loop(a->body);
    if (auto* i = s->as<IfThenElseNode>())
      return wraps_unrolled_loop(i->then_case) || wraps_unrolled_loop(i->else_case);
    return false;
  }

  // Main part in vectors of f->lanes. The remainder: one masked vector where
  // the target masks loads and stores, or masks loads and the remainder's
  // length is known (short_vector); else vectors of half, a quarter, ... (at
  // most one each, down to 4 lanes), then scalars. A row of 43 in 8 lanes
  // runs as 5 x 8 + 3 masked: on AVX2, 3 scalar exponentials of softmax's row
  // cost as much as its 5 vectors (8256x43: 0.38 ms, 0.28 masked).
  void vectorized_loop(const ForNode* f, Value* extent) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(extent); c && c->getSExtValue() <= f->lanes)
      return short_vector(f, b_.getInt64(0), c->getSExtValue());
    Value* begin = b_.getInt64(0);
    vec_var_ = f->var.get();
    const bool masked = f->masked_remainder && (isa_.avx512 || (masked_loads_ && llvm::isa<llvm::ConstantInt>(extent)));
    for (int w = f->lanes; w > 1 && remainder_width(w, f->lanes) && (w == f->lanes || !masked); w /= 2) {
      lanes_ = w;
      if (w == f->lanes && loads_can_lead_stores(f)) {
        Value* end = b_.CreateSub(extent, b_.CreateSRem(b_.CreateSub(extent, begin), b_.getInt64(w * kLoadBatch)));
        counted_loop(f->var.get(), begin, end, w * kLoadBatch, [&] {
          Value* first = vars_.at(f->var.get());
          stores_after_loads(f->body->as<StoreNode>(), kLoadBatch,
                             [&](int64_t c) { vars_[f->var.get()] = b_.CreateAdd(first, b_.getInt64(c * w)); });
        });
        begin = end;
      }
      Value* end = b_.CreateSub(extent, b_.CreateSRem(b_.CreateSub(extent, begin), b_.getInt64(w)));
      counted_loop(f->var.get(), begin, end, w, [&] { stmt(f->body); });
      begin = end;
    }
    lanes_ = 1;
    vec_var_ = nullptr;
    if (!masked) return counted_loop(f->var.get(), begin, extent, 1, [&] { stmt(f->body); });
    Value* rest = b_.CreateSub(extent, begin);
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(rest)) return short_vector(f, begin, c->getSExtValue());
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* tail = BasicBlock::Create(ctx_, "tail", fn);
    BasicBlock* done = BasicBlock::Create(ctx_, "tail_done", fn);
    b_.CreateCondBr(b_.CreateICmpSGT(rest, b_.getInt64(0)), tail, done);
    b_.SetInsertPoint(tail);
    masked_vector(f, begin, rest, f->lanes);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // A vectorized loop that only stores values read from other buffers (an element-wise stage, a row's output)
  // runs kLoadBatch vectors a step, every vector's loads before the first store. A load waits behind an
  // earlier store whose address matches its own in the low 12 bits until the store's address is known
  // (4 KiB aliasing): one vector a step, an output 64 bytes past its input modulo 4 KiB makes every
  // load follow such a store (layernorm 2048x768 on Zen 4: 0.29 ms against 0.23 with the output at the
  // input's offset).
  static constexpr int kLoadBatch = 4;

  static bool loads_can_lead_stores(const ForNode* f) {
    const StoreNode* st = f->body ? f->body->as<StoreNode>() : nullptr;
    if (!st) return false;
    bool reads_target = false;
    visit(st->value, [&](const Expr& e) {
      if (auto* load = e.get()->as<LoadNode>()) reads_target |= load->buffer.get() == st->buffer.get();
      return !reads_target;
    });
    return !reads_target;
  }

  // `st`'s value at `count` positions (`place(c)` sets copy c's variables), then the stores.
  template <typename Place>
  void stores_after_loads(const StoreNode* st, int64_t count, Place place) {
    std::vector<Value*> values;
    for (int64_t c = 0; c < count; ++c) {
      place(c);
      values.push_back(expr(st->value));
    }
    for (int64_t c = 0; c < count; ++c) {
      place(c);
      store_value(st, values[size_t(c)]);
    }
  }

  // A transposing copy in blocks of L x L (ForKind::Transposed): per block,
  // L vectors of the value along k (one per j), transposed in registers by
  // log2(L) rounds of two-input shuffles (round d swaps the off-diagonal
  // d x d sub-blocks of every 2d x 2d block), then stored as L vectors
  // along j. False where the loops are not whole blocks: they then run as
  // scalar loops.
  bool transposed_loop(const ForNode* f, Value* extent) {
    const int L = f->lanes;
    const ForNode* inner = f->body ? f->body->as<ForNode>() : nullptr;
    const StoreNode* st = inner ? inner->body->as<StoreNode>() : nullptr;
    if (!st || tail_mask_ || (L & (L - 1)) || uses_var(inner->extent, f->var.get())) return false;
    auto* rows = llvm::dyn_cast<llvm::ConstantInt>(extent);
    auto* cols = llvm::dyn_cast<llvm::ConstantInt>(expr(inner->extent));
    if (!rows || !cols || rows->getSExtValue() % L || cols->getSExtValue() % L) return false;
    const ExprNode* j = f->var.get();
    const ExprNode* k = inner->var.get();
    counted_loop(j, b_.getInt64(0), extent, L, [&] {
      counted_loop(k, b_.getInt64(0), cols, L, [&] {
        Value* j0 = vars_.at(j);
        Value* k0 = vars_.at(k);
        std::vector<Value*> block;
        lanes_ = L;
        {
          const ScopedVar scoped(vars_, j);
          vec_var_ = k;
          for (int r = 0; r < L; ++r) {
            vars_[j] = b_.CreateAdd(j0, b_.getInt64(r));
            block.push_back(splat(expr(st->value), L));
          }
        }
        transpose_in_registers(block);
        {
          const ScopedVar scoped(vars_, k);
          vec_var_ = j;
          for (int c = 0; c < L; ++c) {
            vars_[k] = b_.CreateAdd(k0, b_.getInt64(c));
            store_value(st, block[size_t(c)]);
          }
        }
        vec_var_ = nullptr;
        lanes_ = 1;
      }, 0, false);
    }, 0, false);
    return true;
  }

  void transpose_in_registers(std::vector<Value*>& rows) {
    const int L = int(rows.size());
    for (int d = 1; d < L; d *= 2)
      for (int i = 0; i < L; ++i) {
        if (i & d) continue;
        std::vector<int> low(rows.size()), high(rows.size());
        for (int p = 0; p < L; ++p) {
          low[size_t(p)] = p & d ? L + p - d : p;
          high[size_t(p)] = p & d ? L + p : p + d;
        }
        Value* a = rows[size_t(i)];
        Value* b = rows[size_t(i + d)];
        rows[size_t(i)] = b_.CreateShuffleVector(a, b, low);
        rows[size_t(i + d)] = b_.CreateShuffleVector(a, b, high);
      }
  }

  // The vector widths a vectorized loop of `lanes` runs in: its own, then
  // halves down to 4 lanes; scalars after.
  static bool remainder_width(int w, int lanes) { return w == lanes || w >= 4; }

  // A vectorized loop's n < lanes elements from `first` on (a short loop
  // of known extent, the last vector of a tile, a remainder): straight-line
  // code, no loop left for later passes to unroll before the accumulators
  // can live in registers. One vector when n is a width it runs in; else
  // one masked vector where the target masks memory operations, else one
  // vector of each width that fits (remainder_width), then scalars. AVX
  // masks loads but not stores (below), which covers a micro-kernel's last
  // columns: per step, a masked load of B and FMAs into whole vectors (a
  // 15-column tile on AVX2 ran 8 + 4 + 3 scalar FMAs a row per step, and
  // matmul 127x127x1023 took 0.56 ms against 0.36 at 128 columns).
  void short_vector(const ForNode* f, Value* first, int64_t n) {
    if (n <= 0) return;
    const bool one_width = (n & (n - 1)) == 0 && n > 1 && remainder_width(int(n), f->lanes);
    if (masked_loads_ && f->masked_remainder && n > 1 && !one_width) {
      int w = 4;
      while (w < n) w *= 2;
      return masked_vector(f, first, b_.getInt64(n), w);
    }
    const ExprNode* var = f->var.get();
    const ScopedVar scoped(vars_, var);
    int64_t begin = 0;
    for (int w = f->lanes; w > 1 && remainder_width(w, f->lanes); w /= 2) {
      if (n - begin < w) continue;
      vars_[var] = b_.CreateAdd(first, b_.getInt64(begin));
      vec_var_ = var;
      lanes_ = w;
      stmt(f->body);
      begin += w;
    }
    lanes_ = 1;
    vec_var_ = nullptr;
    for (; begin < n; ++begin) {
      vars_[var] = b_.CreateAdd(first, b_.getInt64(begin));
      stmt(f->body);
    }
  }

  // The body once as a vector of w lanes from `first` on, of which the
  // first `count` (1 <= count <= w) are live: memory operations masked.
  void masked_vector(const ForNode* f, Value* first, Value* count, int w) {
    const ExprNode* var = f->var.get();
    const ScopedVar scoped(vars_, var);
    vars_[var] = first;
    vec_var_ = var;
    lanes_ = w;
    tail_count_ = count;
    tail_mask_ = b_.CreateICmpSLT(ramp(b_.getInt64(0)), splat(count, w));
    stmt(f->body);
    tail_mask_ = tail_count_ = nullptr;
    lanes_ = 1;
    vec_var_ = nullptr;
  }

  void parallel_loop(const ForNode* f, Value* extent) {
    // Capture every buffer and variable in scope.
    std::vector<const BufferNode*> buffers;
    std::vector<const ExprNode*> vars;
    std::vector<Type*> params;
    for (auto& [buf, v] : bufs_) {
      buffers.push_back(buf);
      params.push_back(b_.getPtrTy());
    }
    for (auto& [var, v] : vars_) {
      vars.push_back(var);
      params.push_back(b_.getInt64Ty());
    }
    params.push_back(b_.getInt64Ty());
    params.push_back(b_.getInt64Ty());
    std::string base = b_.GetInsertBlock()->getParent()->getName().str() + "_par" + std::to_string(task_count_++);
    Function* chunk = Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                       Function::InternalLinkage, base + "_chunk", m_);
    for (size_t i = 0; i < buffers.size(); ++i) chunk->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    FunctionEmitter inner(m_, cpu_);
    inner.emit_parallel_chunk(chunk, buffers, vars, f);

    // task(closure, begin, end): unpack the closure and call the chunk.
    Function* task = Function::Create(
        llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()}, false),
        Function::InternalLinkage, base + "_task", m_);
    {
      llvm::IRBuilder<> tb(BasicBlock::Create(ctx_, "entry", task));
      std::vector<Value*> args;
      Value* closure = task->getArg(0);
      for (size_t i = 0; i < buffers.size() + vars.size(); ++i) {
        Value* slot = tb.CreateConstGEP1_64(tb.getInt64Ty(), closure, i);
        Value* raw = tb.CreateLoad(tb.getInt64Ty(), slot);
        args.push_back(i < buffers.size() ? tb.CreateIntToPtr(raw, tb.getPtrTy()) : raw);
      }
      args.push_back(task->getArg(1));
      args.push_back(task->getArg(2));
      tb.CreateCall(chunk, args);
      tb.CreateRetVoid();
    }

    // Pack the closure on the caller's stack and run.
    Function* fn = b_.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry_b(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    size_t n = buffers.size() + vars.size();
    Value* closure = entry_b.CreateAlloca(b_.getInt64Ty(), b_.getInt64(std::max<size_t>(n, 1)));
    for (size_t i = 0; i < n; ++i) {
      Value* v = i < buffers.size() ? b_.CreatePtrToInt(bufs_[buffers[i]], b_.getInt64Ty()) : vars_[vars[i - buffers.size()]];
      b_.CreateStore(v, b_.CreateConstGEP1_64(b_.getInt64Ty(), closure, i));
    }
    auto* fn_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty()}, false);
    b_.CreateCall(m_.getOrInsertFunction("loom_parallel_for", fn_type), {task, closure, extent});
  }

  void allocate(const AllocateNode* a) {
    LOOM_INTERNAL_CHECK(a->scope == MemScope::Heap || a->scope == MemScope::Stack, "CPU code with a ",
                        to_string(a->scope), " buffer");
    if (a->scope == MemScope::Stack) {
      auto n = product(a->buffer->shape).as_const_int();
      LOOM_INTERNAL_CHECK(n.has_value(), "stack buffer ", a->buffer->name, " needs a constant size");
      Function* fn = b_.GetInsertBlock()->getParent();
      llvm::IRBuilder<> entry_b(&fn->getEntryBlock(), fn->getEntryBlock().begin());
      // One vector of slack past the end, for the dead lanes of masked vectors.
      const int64_t slack = std::max(1, cpu_.vector_bits / (8 * a->buffer->dtype.bytes()));
      llvm::AllocaInst* slot = entry_b.CreateAlloca(scalar_type(a->buffer->dtype), entry_b.getInt64(*n + slack));
      slot->setAlignment(llvm::Align(64));
      bufs_[a->buffer.get()] = slot;
      stmt(a->body);
      bufs_.erase(a->buffer.get());
      return;
    }
    Value* count = expr(product(a->buffer->shape));
    Value* bytes = b_.CreateMul(count, b_.getInt64(a->buffer->dtype.bytes()));
    auto* alloc_t = llvm::FunctionType::get(b_.getPtrTy(), {b_.getInt64Ty()}, false);
    auto* free_t = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    Value* ptr = b_.CreateCall(m_.getOrInsertFunction("loom_alloc", alloc_t), {bytes});
    // Out of memory: skip the body (the failure is reported by the caller).
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* body_bb = BasicBlock::Create(ctx_, "scratch_ok", fn);
    BasicBlock* after_bb = BasicBlock::Create(ctx_, "scratch_done", fn);
    b_.CreateCondBr(b_.CreateIsNotNull(ptr), body_bb, after_bb, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
    b_.SetInsertPoint(body_bb);
    bufs_[a->buffer.get()] = ptr;
    stmt(a->body);
    b_.CreateCall(m_.getOrInsertFunction("loom_free", free_t), {ptr});
    bufs_.erase(a->buffer.get());
    b_.CreateBr(after_bb);
    b_.SetInsertPoint(after_bb);
  }

  void store(const StoreNode* s) { store_value(s, expr(s->value)); }

  // `s` with its value already evaluated.
  void store_value(const StoreNode* s, Value* value) {
    Value* base = bufs_.at(s->buffer.get());
    Type* elt = scalar_type(s->buffer->dtype);
    if (lanes_of(s->index) == 1) {
      LOOM_INTERNAL_CHECK(!is_vec(value), "vector value stored to one element of ", s->buffer->name);
      b_.CreateAlignedStore(value, b_.CreateGEP(elt, base, expr(s->index)), llvm::Align(kElementAlign));
      return;
    }
    value = splat(value, lanes_);
    const llvm::Align align(kElementAlign);
    if (linear_coeff(s->index, vec_var_) != 1)
      return void(b_.CreateMaskedScatter(value, b_.CreateGEP(elt, base, expr(s->index)), align, tail_mask_));
    Value* index = scalar_expr(s->index);
    Value* ptr = b_.CreateGEP(elt, base, index);
    if (!tail_mask_) return void(b_.CreateAlignedStore(value, ptr, align));
    if (!llvm::isa<llvm::AllocaInst>(base)) {
      if (isa_.avx512) return void(b_.CreateMaskedStore(value, ptr, align, tail_mask_));
      return store_live_lanes(value, elt, ptr);
    }
    // A stack buffer has a vector of slack past its end: the dead lanes
    // are written back unchanged, unless no live element is there (then an
    // update stays one instruction, an FMA, rather than an FMA and a blend).
    if (s->buffer->dead_lanes_free) return void(b_.CreateAlignedStore(value, ptr, align));
    b_.CreateAlignedStore(b_.CreateSelect(tail_mask_, value, b_.CreateAlignedLoad(value->getType(), ptr, align)), ptr,
                          align);
  }

  // A masked vector's live lanes (a count known when lowering: only AVX-512
  // masks a remainder of run-time length) stored in pieces of a power of
  // two lanes, largest first (7: 4, 2, 1). AVX's masked store (vmaskmovps)
  // is microcoded on AMD's Zen cores by the published instruction tables
  // (not measured here).
  void store_live_lanes(Value* value, Type* elt, Value* ptr) {
    auto* count = llvm::dyn_cast<llvm::ConstantInt>(tail_count_);
    LOOM_INTERNAL_CHECK(count != nullptr, "a masked store of a run-time count of lanes without AVX-512");
    const uint64_t live = count->getZExtValue();
    for (uint64_t first = 0; first < live;) {
      const uint64_t piece = std::bit_floor(live - first);
      llvm::SmallVector<int, 16> lanes;
      for (uint64_t l = 0; l < piece; ++l) lanes.push_back(int(first + l));
      Value* part = piece == 1 ? b_.CreateExtractElement(value, first) : b_.CreateShuffleVector(value, lanes);
      b_.CreateAlignedStore(part, b_.CreateGEP(elt, ptr, b_.getInt64(int64_t(first))), llvm::Align(kElementAlign));
      first += piece;
    }
  }

  // ---- expressions ----
  // Evaluates with the vector variable standing for its first lane.
  Value* scalar_expr(const Expr& e) {
    bool saved = scalarize_;
    scalarize_ = true;
    Value* v = expr(e);
    scalarize_ = saved;
    return v;
  }

  Value* ramp(Value* base) {
    std::vector<llvm::Constant*> steps;
    for (int i = 0; i < lanes_; ++i) steps.push_back(b_.getInt64(i));
    return b_.CreateAdd(splat(base, lanes_), llvm::ConstantVector::get(steps));
  }

  Value* expr(const Expr& e) {
    const ExprNode* n = e.get();
    switch (n->kind) {
      case ExprKind::IntImm: return llvm::ConstantInt::get(scalar_type(n->dtype), n->as<IntImmNode>()->value, true);
      case ExprKind::FloatImm: return llvm::ConstantFP::get(scalar_type(n->dtype), n->as<FloatImmNode>()->value);
      case ExprKind::Var: {
        auto it = vars_.find(n);
        LOOM_INTERNAL_CHECK(it != vars_.end(), "codegen: unbound variable ", n->as<VarNode>()->name);
        return n == vec_var_ && lanes_ > 1 && !scalarize_ ? ramp(it->second) : it->second;
      }
      case ExprKind::Binary: return binary(n->as<BinaryNode>());
      case ExprKind::Unary: return unary(n->as<UnaryNode>());
      case ExprKind::Compare: return compare(n->as<CompareNode>());
      case ExprKind::Select: return select_value(e, n->as<SelectNode>());
      case ExprKind::Cast: return cast_value(n->as<CastNode>());
      case ExprKind::Load: return load(n->as<LoadNode>());
      default: throw InternalError("codegen: unlowered expression " + e.str());
    }
  }

  Value* floor_div_adjust(Value* q, Value* r, Value* d, bool want_mod) {
    // C division truncates; floor division subtracts one when the remainder
    // is non-zero and has the opposite sign of the divisor.
    Value* zero = llvm::Constant::getNullValue(r->getType());
    Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, d), zero));
    if (want_mod) return b_.CreateSelect(adjust, b_.CreateAdd(r, d), r);
    return b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
  }

  Value* binary(const BinaryNode* n) {
    Value* a = expr(n->a);
    Value* c = expr(n->b);
    match(a, c);
    if (n->dtype.is_float()) {
      switch (n->op) {
        case BinaryOp::Add: return b_.CreateFAdd(a, c);
        case BinaryOp::Sub: return b_.CreateFSub(a, c);
        case BinaryOp::Mul: return b_.CreateFMul(a, c);
        case BinaryOp::Div: return b_.CreateFDiv(a, c);
        case BinaryOp::Max: return b_.CreateSelect(b_.CreateFCmpOGT(a, c), a, c);
        case BinaryOp::Min: return b_.CreateSelect(b_.CreateFCmpOLT(a, c), a, c);
        default: break;
      }
    } else {
      switch (n->op) {
        case BinaryOp::Add: return b_.CreateAdd(a, c);
        case BinaryOp::Sub: return b_.CreateSub(a, c);
        case BinaryOp::Mul: return b_.CreateMul(a, c);
        case BinaryOp::Div: return floor_div_adjust(b_.CreateSDiv(a, c), b_.CreateSRem(a, c), c, false);
        case BinaryOp::Mod: return floor_div_adjust(nullptr, b_.CreateSRem(a, c), c, true);
        case BinaryOp::Max: return b_.CreateSelect(b_.CreateICmpSGT(a, c), a, c);
        case BinaryOp::Min: return b_.CreateSelect(b_.CreateICmpSLT(a, c), a, c);
        case BinaryOp::And: return b_.CreateAnd(a, c);
        case BinaryOp::Or: return b_.CreateOr(a, c);
      }
    }
    throw InternalError(std::string("codegen: bad binary op ") + to_string(n->op));
  }

  Value* unary(const UnaryNode* n) {
    Value* x = expr(n->a);
    Type* t = x->getType();
    switch (n->op) {
      case UnaryOp::Neg: return n->dtype.is_float() ? b_.CreateFNeg(x) : b_.CreateNeg(x);
      case UnaryOp::Not: return b_.CreateNot(x);
      case UnaryOp::Exp: return emit_exp(b_, m_, x, isa_);
      case UnaryOp::Log: return b_.CreateCall(intrinsic(llvm::Intrinsic::log, t), {x});
      case UnaryOp::Sqrt: return b_.CreateCall(intrinsic(llvm::Intrinsic::sqrt, t), {x});
      case UnaryOp::Rsqrt:
        return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), b_.CreateCall(intrinsic(llvm::Intrinsic::sqrt, t), {x}));
      case UnaryOp::Abs:
        if (n->dtype.is_float()) return b_.CreateCall(intrinsic(llvm::Intrinsic::fabs, t), {x});
        return b_.CreateSelect(b_.CreateICmpSLT(x, llvm::Constant::getNullValue(t)), b_.CreateNeg(x), x);
      case UnaryOp::Tanh: return emit_tanh(b_, m_, x, isa_);
      case UnaryOp::Erf: return emit_erf(b_, m_, x, isa_);
    }
    throw InternalError("codegen: bad unary op");
  }

  Value* compare(const CompareNode* n) {
    Value* a = expr(n->a);
    Value* c = expr(n->b);
    match(a, c);
    if (n->a.dtype().is_float()) {
      switch (n->op) {
        case CompareOp::LT: return b_.CreateFCmpOLT(a, c);
        case CompareOp::LE: return b_.CreateFCmpOLE(a, c);
        case CompareOp::GT: return b_.CreateFCmpOGT(a, c);
        case CompareOp::GE: return b_.CreateFCmpOGE(a, c);
        case CompareOp::EQ: return b_.CreateFCmpOEQ(a, c);
        case CompareOp::NE: return b_.CreateFCmpUNE(a, c);
      }
    }
    switch (n->op) {
      case CompareOp::LT: return b_.CreateICmpSLT(a, c);
      case CompareOp::LE: return b_.CreateICmpSLE(a, c);
      case CompareOp::GT: return b_.CreateICmpSGT(a, c);
      case CompareOp::GE: return b_.CreateICmpSGE(a, c);
      case CompareOp::EQ: return b_.CreateICmpEQ(a, c);
      case CompareOp::NE: return b_.CreateICmpNE(a, c);
    }
    throw InternalError("codegen: bad compare op");
  }

  // A select may guard a read that is out of bounds when its condition is
  // false (padding). With a uniform condition both sides are evaluated with
  // every load's index clamped into its buffer, then blended: no branch to
  // mispredict. With a lane-varying one, loads are masked instead.
  Value* select_value(const Expr& e, const SelectNode* n) {
    Value* cond = expr(n->cond);
    const int lanes = lanes_of(e);
    if (!is_vec(cond) && speculatable(n->then_value) && speculatable(n->else_value)) {
      bool saved = clamp_loads_;
      clamp_loads_ = true;
      Value* tv = splat(expr(n->then_value), lanes);
      Value* ev = splat(expr(n->else_value), lanes);
      clamp_loads_ = saved;
      return b_.CreateSelect(cond, tv, ev);
    }
    if (!is_vec(cond)) {
      Function* fn = b_.GetInsertBlock()->getParent();
      BasicBlock* then_bb = BasicBlock::Create(ctx_, "then", fn);
      BasicBlock* else_bb = BasicBlock::Create(ctx_, "else", fn);
      BasicBlock* merge = BasicBlock::Create(ctx_, "merge", fn);
      b_.CreateCondBr(cond, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      Value* tv = splat(expr(n->then_value), lanes);
      BasicBlock* then_end = b_.GetInsertBlock();
      b_.CreateBr(merge);
      b_.SetInsertPoint(else_bb);
      Value* ev = splat(expr(n->else_value), lanes);
      BasicBlock* else_end = b_.GetInsertBlock();
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
      llvm::PHINode* phi = b_.CreatePHI(tv->getType(), 2);
      phi->addIncoming(tv, then_end);
      phi->addIncoming(ev, else_end);
      return phi;
    }
    Value* outer = mask_;
    mask_ = outer ? b_.CreateAnd(outer, cond) : cond;
    Value* tv = splat(expr(n->then_value), lanes_);
    Value* not_cond = b_.CreateNot(cond);
    mask_ = outer ? b_.CreateAnd(outer, not_cond) : not_cond;
    Value* ev = splat(expr(n->else_value), lanes_);
    mask_ = outer;
    return b_.CreateSelect(cond, tv, ev);
  }

  // Cheap enough to evaluate on both sides of a select: loads and plain
  // arithmetic, no transcendental calls, no nested selects.
  static bool speculatable(const Expr& e) {
    bool ok = true;
    visit(e, [&](const Expr& x) {
      if (auto* u = x.get()->as<UnaryNode>())
        ok &= u->op == UnaryOp::Neg || u->op == UnaryOp::Abs || u->op == UnaryOp::Not;
      ok &= x.get()->kind != ExprKind::Select;
      return ok;
    });
    return ok;
  }

  Value* cast_value(const CastNode* n) {
    Value* x = expr(n->value);
    DType from = n->value.dtype(), to = n->dtype;
    Type* t = scalar_type(to);
    if (is_vec(x)) t = llvm::FixedVectorType::get(t, lanes_);
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(x, t);
    if (from.is_float()) return b_.CreateFPToSI(x, t);
    if (to.is_float()) return from.is_bool() ? b_.CreateUIToFP(x, t) : b_.CreateSIToFP(x, t);
    return b_.CreateIntCast(x, t, !from.is_bool());
  }

  // Clamps an index into [0, size - span] of its buffer (speculated loads;
  // span: the lanes a contiguous load needs in the buffer, else 1).
  Value* clamped(Value* index, const BufferNode* buffer, Value* span = nullptr) {
    Value* last = b_.CreateSub(expr(product(buffer->shape)), span ? span : b_.getInt64(1));
    if (is_vec(index)) last = splat(last, lanes_);
    Value* zero = llvm::Constant::getNullValue(index->getType());
    Value* low = b_.CreateSelect(b_.CreateICmpSLT(index, zero), zero, index);
    return b_.CreateSelect(b_.CreateICmpSGT(low, last), last, low);
  }

  Value* load(const LoadNode* n) {
    Value* base = bufs_.at(n->buffer.get());
    Type* elt = scalar_type(n->dtype);
    const llvm::Align align(kElementAlign);
    if (clamp_loads_) {  // speculated: clamp the address, keep the access shape
      if (lanes_of(n->index) == 1)
        return b_.CreateAlignedLoad(elt, b_.CreateGEP(elt, base, clamped(expr(n->index), n->buffer.get())), align);
      auto* vt = llvm::FixedVectorType::get(elt, lanes_);
      if (linear_coeff(n->index, vec_var_) == 1) {
        // In a masked vector only the live lanes need be in the buffer.
        Value* span = tail_count_ ? tail_count_ : b_.getInt64(lanes_);
        return contiguous_load(vt, base, clamped(scalar_expr(n->index), n->buffer.get(), span), tail_mask_);
      }
      return b_.CreateMaskedGather(vt, b_.CreateGEP(elt, base, clamped(expr(n->index), n->buffer.get())), align,
                                   all_true());
    }
    if (lanes_of(n->index) == 1) {
      Value* ptr = b_.CreateGEP(elt, base, expr(n->index));
      if (!mask_) return b_.CreateAlignedLoad(elt, ptr, align);
      // A uniform address under a lane mask: load only if some lane is live.
      return b_.CreateMaskedGather(llvm::FixedVectorType::get(elt, lanes_), splat(ptr, lanes_), align, mask_);
    }
    auto* vt = llvm::FixedVectorType::get(elt, lanes_);
    Value* mask = mask_ && tail_mask_ ? b_.CreateAnd(mask_, tail_mask_) : mask_ ? mask_ : tail_mask_;
    if (linear_coeff(n->index, vec_var_) == 1)
      return contiguous_load(vt, base, scalar_expr(n->index), mask);
    return b_.CreateMaskedGather(vt, b_.CreateGEP(elt, base, expr(n->index)), align, mask ? mask : all_true());
  }

  // A vector load of consecutive elements from `index` on, under a lane
  // mask if any. In a stack buffer, a masked vector's dead lanes read its
  // slack: a plain load.
  Value* contiguous_load(llvm::FixedVectorType* vt, Value* base, Value* index, Value* mask) {
    const llvm::Align align(kElementAlign);
    Type* elt = vt->getElementType();
    Value* ptr = b_.CreateGEP(elt, base, index);
    if (!mask || (mask == tail_mask_ && llvm::isa<llvm::AllocaInst>(base))) return b_.CreateAlignedLoad(vt, ptr, align);
    return b_.CreateMaskedLoad(vt, ptr, align, mask);
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const CpuSpec& cpu_;
  std::unordered_map<const BufferNode*, Value*> bufs_;
  std::unordered_map<const ExprNode*, Value*> vars_;
  const ExprNode* vec_var_ = nullptr;
  int lanes_ = 1;
  bool scalarize_ = false;
  bool in_parallel_ = false;
  bool clamp_loads_ = false;  // inside a speculated select
  Value* mask_ = nullptr;       // lanes live under a lane-varying select
  // AVX2: vpermps over 8 floats; AVX-512: masked vector loads and stores, vscalefps.
  const VectorIsa isa_;
  const bool masked_loads_;     // ... or AVX: masked vector loads (vmaskmovps)
  Value* tail_mask_ = nullptr;  // in a masked vector: its live lanes
  Value* tail_count_ = nullptr;  // ... and how many
  int task_count_ = 0;
};

void set_target_attributes(llvm::Module& m, const CpuSpec& cpu) {
  const std::string width = std::to_string(cpu.vector_bits), features = target_features(cpu);
  for (Function& f : m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr(llvm::Attribute::NoUnwind);
    f.addFnAttr("prefer-vector-width", width);
    f.addFnAttr("min-legal-vector-width", width);
    if (!features.empty()) f.addFnAttr("target-features", features);
  }
}

}  // namespace

std::string target_features(const CpuSpec& cpu) {
  static const llvm::StringMap<bool> host = [] {
    llvm::StringMap<bool> features;
    llvm::sys::getHostCPUFeatures(features);
    return features;
  }();
  llvm::SubtargetFeatures features;
  for (auto& f : host) features.AddFeature(f.first(), f.second);
  auto listed = [&](const char* name) { return std::find(cpu.isa.begin(), cpu.isa.end(), name) != cpu.isa.end(); };
  if (!cpu.isa.empty())
    for (const char* ext : {"avx512f", "avx2", "fma"})
      if (!listed(ext)) features.AddFeature(ext, false);  // also clears the extensions that imply it
  return features.getString();
}

LlvmModule build_llvm_module(const LoweredFunc& func, const CpuSpec& cpu, const std::string& symbol) {
  LlvmModule out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(symbol, *out.context);
  out.entry = symbol;
  llvm::Module& m = *out.module;
  llvm::IRBuilder<> b(*out.context);

  std::vector<const BufferNode*> buffers;
  std::vector<const ExprNode*> vars;
  std::vector<Type*> params;
  for (const BufferRef& buf : func.args) {
    buffers.push_back(buf.get());
    params.push_back(b.getPtrTy());
  }
  for (const Var& v : func.size_vars) {
    vars.push_back(v.get());
    params.push_back(b.getInt64Ty());
  }
  Function* body = Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                    Function::InternalLinkage, symbol + "_body", m);
  for (size_t i = 0; i < buffers.size(); ++i) body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
  FunctionEmitter(m, cpu).emit_function(body, buffers, vars, func.body);

  Function* entry = Function::Create(llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false),
                                     Function::ExternalLinkage, symbol, m);
  b.SetInsertPoint(BasicBlock::Create(*out.context, "entry", entry));
  std::vector<Value*> args;
  for (size_t i = 0; i < buffers.size(); ++i)
    args.push_back(b.CreateLoad(b.getPtrTy(), b.CreateConstGEP1_64(b.getPtrTy(), entry->getArg(0), i)));
  for (size_t i = 0; i < vars.size(); ++i)
    args.push_back(b.CreateLoad(b.getInt64Ty(), b.CreateConstGEP1_64(b.getInt64Ty(), entry->getArg(1), i)));
  b.CreateCall(body, args);
  b.CreateRetVoid();

  set_target_attributes(m, cpu);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(m, &es)) throw InternalError("generated LLVM IR is invalid: " + es.str());
  return out;
}

}  // namespace loom::codegen
