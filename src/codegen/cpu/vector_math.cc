#include "codegen/cpu/vector_math.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <bit>
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

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 in two parts).
// n is rounded by adding kShifter, whose floats are spaced 1 apart: the sum `shifted` holds n + 127
// in its low mantissa bits. exp(r) is a degree-5 minimax polynomial: relative error 1.2e-7 with its
// float coefficients (Remez on |r| <= ln2/2, then the rounded coefficients searched a few ulp round).
// `n_at_most_127`: an integer min on the sum's bits (off the multiply-add ports) keeps n <= 127; past
// 88.38 r then grows beyond ln2/2 and the polynomial carries the rest (5e-5 relative up to 88.72,
// where float overflows).
struct ExpReduction {
  llvm::Value* shifted;
  llvm::Value* n;
  llvm::Value* p;  // exp(r)
};

ExpReduction reduce_exp(llvm::IRBuilder<>& b, llvm::Value* x, bool n_at_most_127) {
  constexpr double kShifter = 12582912.0 + 127.0;  // 1.5 * 2^23, plus the exponent bias
  llvm::Value* shifted = b.CreateFAdd(b.CreateFMul(x, constant(x, 1.4426950408889634)), constant(x, kShifter));
  if (n_at_most_127) {
    llvm::Type* it = int_type_like(b, x);
    const float most = float(kShifter + 127);
    llvm::Value* bits = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateBitCast(shifted, it),
                                                llvm::ConstantInt::get(it, std::bit_cast<int32_t>(most)));
    shifted = b.CreateBitCast(bits, x->getType());
  }
  llvm::Value* n = b.CreateFSub(shifted, constant(x, kShifter));
  llvm::Value* r = b.CreateFSub(x, b.CreateFMul(n, constant(x, 0.693145751953125)));
  r = b.CreateFSub(r, b.CreateFMul(n, constant(x, 1.428606765330187e-06)));
  return {shifted, n, polynomial(b, r, {1.0000001192092896, 0.9999997615814209, 0.499988853931427,
                                        0.16667579114437103, 0.041915372014045715, 0.008297652006149292})};
}

}  // namespace

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512) {
  // Contraction only: reassociated, (s - kShifter) below would fold back to x / ln 2 unrounded, and
  // the two parts of ln 2 into one.
  llvm::IRBuilderBase::FastMathFlagGuard keep_caller_flags(b);
  llvm::FastMathFlags contract_only;
  contract_only.setAllowContract(true);
  b.setFastMathFlags(contract_only);
  // Results below the smallest normal float are 0: a denormal or underflowing result, and any arithmetic
  // on a denormal, takes a microcode assist per operation, with no flush-to-zero (softmax 1536x128 with
  // half of every row masked at -1e4: 0.89 ms, against 0.05 unmasked). Below ln(FLT_MIN) the input counts
  // as ln(FLT_MIN), so 2^n stays normal, and the result is replaced by 0 (NaN fails the test and passes).
  constexpr double kLnMinNormal = -87.33654475055310898657;
  llvm::Value* below = b.CreateFCmpOLT(x, constant(x, kLnMinNormal));
  llvm::Value* v = b.CreateSelect(below, constant(x, kLnMinNormal), x);
  llvm::Value* y;
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (avx512 && vector && vector->getNumElements() == 16 && vector->getElementType()->isFloatTy()) {
    // p * 2^n by vscalefps, which rounds to +inf itself; the clamp only keeps n finite for infinite inputs.
    v = b.CreateSelect(b.CreateFCmpOGT(v, constant(x, 150.0)), constant(x, 150.0), v);
    const ExpReduction e = reduce_exp(b, v, false);
    y = b.CreateCall(llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::x86_avx512_mask_scalef_ps_512),
                     {e.p, e.n, llvm::UndefValue::get(x->getType()), b.getInt16(0xffff), b.getInt32(4)});
  } else {
    // 2^n is the shifted sum's low bits moved into the exponent field, n in [-126, 127]. Large inputs
    // overflow in p * 2^n (+inf; NaN stays).
    const ExpReduction e = reduce_exp(b, v, true);
    llvm::Value* scale =
        b.CreateBitCast(b.CreateShl(b.CreateBitCast(e.shifted, int_type_like(b, x)), 23), x->getType());
    y = b.CreateFMul(e.p, scale);
  }
  return b.CreateSelect(below, llvm::Constant::getNullValue(x->getType()), y);
}

llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512) {
  // erf(|x|) = 1 - t (a1 + a2 t + ... + a5 t^4) exp(-x^2), t = 1 / (1 + p |x|).
  // |x| is taken as at most 4, where erf is 1 in float (1 - 1.5e-8): past ~9.3, exp(-x^2) is a denormal,
  // and arithmetic on denormals takes a microcode assist per operation (dense 688x3072x768 + bias + GELU on
  // random inputs: 31 ms unclamped, 21 clamped, 18 without the epilogue). NaN stays NaN.
  llvm::Value* ax = call(b, m, llvm::Intrinsic::fabs, x);
  ax = b.CreateSelect(b.CreateFCmpOGT(ax, constant(x, 4.0)), constant(x, 4.0), ax);
  llvm::Value* t =
      b.CreateFDiv(constant(x, 1.0), b.CreateFAdd(constant(x, 1.0), b.CreateFMul(ax, constant(x, 0.3275911))));
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
