#include "codegen/cpu/vector_math.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <cmath>

namespace loom::codegen {

namespace {

llvm::Value* constant(llvm::Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

llvm::Value* call(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Intrinsic::ID id, llvm::Value* x) {
  return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, id, {x->getType()}), {x});
}

// Horner evaluation of c[0] + c[1] x + ... (fused multiply-adds after contraction).
llvm::Value* polynomial(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> c) {
  const double* coeff = c.begin();
  llvm::Value* acc = constant(x, coeff[c.size() - 1]);
  for (size_t i = c.size() - 1; i-- > 0;) acc = b.CreateFAdd(b.CreateFMul(acc, x), constant(x, coeff[i]));
  return acc;
}

llvm::Type* int_type_like(llvm::IRBuilder<>& b, llvm::Value* x) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(x->getType()))
    return llvm::FixedVectorType::get(b.getInt32Ty(), v->getNumElements());
  return b.getInt32Ty();
}

llvm::Value* call_copysign(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* magnitude, llvm::Value* sign) {
  return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::copysign, {magnitude->getType()}),
                      {magnitude, sign});
}

}  // namespace

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512) {
  // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2].
  auto reduce = [&](llvm::Value* v, llvm::Value*& n) {
    n = call(b, m, llvm::Intrinsic::rint, b.CreateFMul(v, constant(x, 1.4426950408889634)));
    llvm::Value* r = b.CreateFSub(v, b.CreateFMul(n, constant(x, 0.693145751953125)));
    r = b.CreateFSub(r, b.CreateFMul(n, constant(x, 1.428606765330187e-06)));
    return polynomial(b, r, {1.0, 1.0, 0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333,
                             0.001388888888888889, 0.0001984126984126984});
  };
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (avx512 && vector && vector->getNumElements() == 16 && vector->getElementType()->isFloatTy()) {
    // p * 2^n by vscalefps, which rounds to 0, a denormal or +inf itself;
    // the clamp only keeps n finite for infinite inputs (NaN passes).
    llvm::Value* clamped = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, -150.0)), constant(x, -150.0), x);
    clamped = b.CreateSelect(b.CreateFCmpOGT(clamped, constant(x, 150.0)), constant(x, 150.0), clamped);
    llvm::Value* n = nullptr;
    llvm::Value* p = reduce(clamped, n);
    return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::x86_avx512_mask_scalef_ps_512),
                        {p, n, llvm::UndefValue::get(x->getType()), b.getInt16(0xffff), b.getInt32(4)});
  }
  llvm::Value* clamped = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, -87.3)), constant(x, -87.3), x);
  clamped = b.CreateSelect(b.CreateFCmpOGT(clamped, constant(x, 88.3)), constant(x, 88.3), clamped);
  llvm::Value* n = nullptr;
  llvm::Value* p = reduce(clamped, n);
  // 2^n from the exponent bits; n in [-126, 127] after clamping.
  llvm::Type* it = int_type_like(b, x);
  llvm::Value* bits = b.CreateShl(b.CreateAdd(b.CreateFPToSI(n, it), llvm::ConstantInt::get(it, 127)), 23);
  llvm::Value* scale = b.CreateBitCast(bits, x->getType());
  llvm::Value* result = b.CreateFMul(p, scale);
  // Saturate: exp of very negative inputs is 0, of large ones +inf.
  result = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, -87.3)), constant(x, 0.0), result);
  return b.CreateSelect(b.CreateFCmpOGT(x, constant(x, 88.7)), constant(x, INFINITY), result);
}

llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512) {
  // erf(|x|) = 1 - t (a1 + a2 t + ... + a5 t^4) exp(-x^2), t = 1 / (1 + p |x|).
  llvm::Value* ax = call(b, m, llvm::Intrinsic::fabs, x);
  llvm::Value* t = b.CreateFDiv(constant(x, 1.0), b.CreateFAdd(constant(x, 1.0), b.CreateFMul(ax, constant(x, 0.3275911))));
  llvm::Value* poly = b.CreateFMul(
      t, polynomial(b, t, {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429}));
  llvm::Value* e = emit_exp(b, m, b.CreateFNeg(b.CreateFMul(ax, ax)), avx512);
  llvm::Value* y = b.CreateFSub(constant(x, 1.0), b.CreateFMul(poly, e));
  return call_copysign(b, m, y, x);
}

llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512) {
  // tanh(|x|) = 1 - 2 / (exp(2|x|) + 1), sign restored; exact to float near 0
  // is not needed for the absolute tolerance kernels are checked with.
  llvm::Value* ax = call(b, m, llvm::Intrinsic::fabs, x);
  llvm::Value* e = emit_exp(b, m, b.CreateFMul(ax, constant(x, 2.0)), avx512);
  llvm::Value* y = b.CreateFSub(constant(x, 1.0), b.CreateFDiv(constant(x, 2.0), b.CreateFAdd(e, constant(x, 1.0))));
  return call_copysign(b, m, y, x);
}

}  // namespace loom::codegen
