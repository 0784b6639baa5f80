#include "codegen/cpu/vector_math.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <bit>
#include <cmath>
#include <vector>

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

// round(x * scale) + bias as the bits of a float: adding kShifter, whose neighbouring floats are 1 apart,
// leaves bias + n in the sum's low mantissa bits. An integer min (off the multiply-add ports) keeps n <= most,
// so that 2^n built from those bits stays finite; NaN's bits pass through or are capped alike.
constexpr double kShifter = 12582912.0;  // 1.5 * 2^23

llvm::Value* rounded_bits(llvm::IRBuilder<>& b, llvm::Value* x, double scale, int bias, int most) {
  llvm::Type* it = int_type_like(b, x);
  llvm::Value* shifted = b.CreateFAdd(b.CreateFMul(x, constant(x, scale)), constant(x, kShifter + bias));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateBitCast(shifted, it),
                                 llvm::ConstantInt::get(it, std::bit_cast<int32_t>(float(kShifter + bias + most))));
}

// r = x - n * step, step in two parts (`high` short enough that n * high is exact for every n rounded here).
llvm::Value* reduced(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* n, double high, double low) {
  llvm::Value* r = b.CreateFSub(x, b.CreateFMul(n, constant(x, high)));
  return b.CreateFSub(r, b.CreateFMul(n, constant(x, low)));
}

// exp(x) = 2^n * exp(r), n = round(x / ln 2) in [-126, 127], r = x - n ln 2 in [-ln2/2, ln2/2]: 2^n is the
// rounded sum's low bits (n + 127) moved into the exponent field. exp(r) is a degree-5 minimax polynomial:
// relative error 1.2e-7 with its float coefficients (Remez on |r| <= ln2/2, then the rounded coefficients
// searched a few ulp round). Past 88.38, n stays 127, r grows beyond ln2/2 and the polynomial carries the
// rest (5e-5 relative up to 88.72, where float overflows); larger inputs overflow to +inf in p * 2^n.
llvm::Value* exp_by_octaves(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* bits = rounded_bits(b, x, 1.4426950408889634, 127, 127);
  llvm::Value* n = b.CreateFSub(b.CreateBitCast(bits, x->getType()), constant(x, kShifter + 127));
  llvm::Value* r = reduced(b, x, n, 0.693145751953125, 1.428606765330187e-06);
  llvm::Value* p = polynomial(b, r, {1.0000001192092896, 0.9999997615814209, 0.499988853931427,
                                     0.16667579114437103, 0.041915372014045715, 0.008297652006149292});
  return b.CreateFMul(p, b.CreateBitCast(b.CreateShl(bits, 23), x->getType()));
}

// exp(x) = 2^k * 2^(j/P) * exp(r) for a table of P = 16 (AVX-512) or 8 (AVX2) parts of an octave:
// n = round(P x / ln 2) = P k + j, r = x - n ln2/P in [-ln2/2P, ln2/2P]. The P values 2^(j/P) sit in one
// P-lane register, picked per lane by vpermps; 2^k is added to their exponent field as an integer. exp(r) - 1
// is r (1 + c1 r + c2 r^2): Taylor's 1/2, 1/6 over sixteenths (9e-9 relative), a minimax fit over eighths
// (3e-8, Taylor's 1.6e-7), so a lane takes 7 multiply-adds against exp_by_octaves' 9; the table and the
// integer operations issue on other ports. The rounded sum's bits shifted left by 23 - log2(P) are k in the
// exponent field plus j shifted as far, which each table entry has subtracted in advance; vpermps reads only
// their low bits, j. With n capped at 128 P - 1 (k <= 127), r grows up to ln2/P near float's overflow (past
// 88.69 or 88.64), and the cubic is then within 3e-6; larger inputs overflow to +inf in the last multiply-add;
// NaN stays.
struct OctaveTable {
  int parts;
  llvm::Intrinsic::ID permute;  // (table, index) -> table[index mod parts], per lane
  double c1, c2;
};
constexpr OctaveTable kSixteenths{16, llvm::Intrinsic::x86_avx512_permvar_sf_512, 0.5, 1.0 / 6};
constexpr OctaveTable kEighths{8, llvm::Intrinsic::x86_avx2_permps, 0.5000660419464111, 0.1666424423456192};

llvm::Value* exp_by_table(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, const OctaveTable& t) {
  const int shift = 23 - std::countr_zero(unsigned(t.parts));
  // ln 2 / 16 in a high part short enough that n * high is exact for |n| < 2048, doubled for eighths.
  const double step = 16.0 / t.parts;
  llvm::Value* bits = rounded_bits(b, x, t.parts / 0.6931471805599453, 0, t.parts * 128 - 1);
  llvm::Value* n = b.CreateFSub(b.CreateBitCast(bits, x->getType()), constant(x, kShifter));
  llvm::Value* r = reduced(b, x, n, 0.0433197021484375 * step, 1.9966364561696537e-06 * step);
  std::vector<float> entries;
  for (int32_t j = 0; j < t.parts; ++j) {
    const float power = float(std::exp2(double(j) / t.parts));
    entries.push_back(std::bit_cast<float>(std::bit_cast<int32_t>(power) - (j << shift)));
  }
  llvm::Value* entry = b.CreateCall(llvm::Intrinsic::getDeclaration(&m, t.permute),
                                    {llvm::ConstantDataVector::get(b.getContext(), entries), bits});
  llvm::Value* scale = b.CreateBitCast(
      b.CreateAdd(b.CreateBitCast(entry, bits->getType()), b.CreateShl(bits, uint64_t(shift))), x->getType());
  llvm::Value* q = b.CreateFMul(r, polynomial(b, r, {1.0, t.c1, t.c2}));
  return b.CreateFAdd(b.CreateFMul(scale, q), scale);
}

}  // namespace

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa) {
  // Contraction only: reassociated, (s - kShifter) would fold back to x / ln 2 unrounded, and the two
  // parts of ln 2 into one.
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
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  const unsigned lanes = vector && vector->getElementType()->isFloatTy() ? vector->getNumElements() : 0;
  llvm::Value* y = isa.avx512 && lanes == 16 ? exp_by_table(b, m, v, kSixteenths)
                   : isa.avx2 && lanes == 8  ? exp_by_table(b, m, v, kEighths)
                                             : exp_by_octaves(b, v);
  return b.CreateSelect(below, llvm::Constant::getNullValue(x->getType()), y);
}

llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa) {
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
  llvm::Value* e = emit_exp(b, m, b.CreateFNeg(b.CreateFMul(ax, ax)), isa);
  llvm::Value* y = b.CreateFSub(constant(x, 1.0), b.CreateFMul(poly, e));
  return call_copysign(b, m, y, x);
}

llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa) {
  // tanh(|x|) = 1 - 2 / (exp(2|x|) + 1), sign restored; exact to float near 0
  // is not needed for the absolute tolerance kernels are checked with.
  llvm::Value* ax = call(b, m, llvm::Intrinsic::fabs, x);
  llvm::Value* e = emit_exp(b, m, b.CreateFMul(ax, constant(x, 2.0)), isa);
  llvm::Value* y = b.CreateFSub(constant(x, 1.0), b.CreateFDiv(constant(x, 2.0), b.CreateFAdd(e, constant(x, 1.0))));
  return call_copysign(b, m, y, x);
}

}  // namespace loom::codegen
