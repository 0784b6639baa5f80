// Transcendental functions as inline IR on scalars or vectors.
//
// LLVM lowers llvm.exp on vectors to one libm call per lane, and has no erf
// or tanh intrinsic at all; these polynomial forms vectorize with the rest
// of the kernel. Accuracy (float32): exp within 2e-7 relative (3.2 ulp, the
// worst over 4M points of [-87.3, 88.3]; 5e-5 from there to where float
// overflows, 88.72, without AVX-512; 1.2e-7 up to 88.69 and 1.5e-7 beyond
// with it), erf within 1.5e-7 absolute (Abramowitz & Stegun 7.1.26), tanh
// within 1e-7 absolute via exp. Inputs outside exp's range saturate to 0 or
// +inf. exp is most of the cost of softmax and GELU, whose rows are otherwise
// a few loads and adds, so it is built for multiply-add count: a degree-5
// polynomial over octaves, not 6 (1.5 ulp, one more multiply-add, 10%
// slower); with `avx512` (the target has AVX-512) a cubic over sixteenths of
// an octave, whose 16 powers of two sit in one register (vpermps), two
// multiply-adds fewer again (softmax 1536x128 3-4% faster).
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace loom::codegen {

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);
llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);
llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, bool avx512);

}  // namespace loom::codegen
