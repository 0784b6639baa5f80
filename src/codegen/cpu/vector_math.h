// Transcendental functions as inline IR on scalars or vectors.
//
// LLVM lowers llvm.exp on vectors to one libm call per lane, and has no erf
// or tanh intrinsic at all; these polynomial forms vectorize with the rest
// of the kernel. Accuracy (float32): exp within 2e-7 relative (3.2 ulp, the
// worst over 4M points of [-87.3, 88.3]; 5e-5 from there to where float
// overflows, 88.72, without AVX-512), erf within 1.5e-7 absolute
// (Abramowitz & Stegun 7.1.26), tanh within 1e-7 absolute via exp. Inputs
// outside exp's range saturate to 0 or +inf. exp's polynomial is degree 5,
// not 6 (1.5 ulp, one more multiply-add, 10% slower): exp is most of the
// cost of softmax and GELU, whose rows are otherwise a few loads and adds.
// `avx512`: the target has AVX-512, whose vscalefps computes p * 2^n with
// the range handled (0, denormals, +inf), so a 16-lane exp skips building
// 2^n from exponent bits and clamping n to its range.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace loom::codegen {

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);
llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);
llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);

}  // namespace loom::codegen
