// Transcendental functions as inline IR on scalars or vectors.
//
// LLVM lowers llvm.exp on vectors to one libm call per lane, and has no erf
// or tanh intrinsic at all; these polynomial forms vectorize with the rest of
// the kernel. Accuracy (float32): exp within 2e-7 relative (3.2 ulp, the
// worst over 4M points of [-87.3, 88.3]; 5e-5 from there to where float
// overflows, 88.72) over octaves; 1.1e-7 up to 88.3 and 4.2e-7 beyond over
// eighths (AVX2, 8 lanes); 1.2e-7 up to 88.69 and 1.5e-7 beyond over
// sixteenths (AVX-512, 16 lanes); erf within 1.5e-7 absolute (Abramowitz &
// Stegun 7.1.26), tanh within 1e-7 absolute via exp. Inputs outside exp's
// range saturate to 0 or +inf. exp is most of the cost of softmax and GELU,
// whose rows are otherwise a few loads and adds, so it is built for
// multiply-add count: a degree-5 polynomial over octaves, not 6 (1.5 ulp, one
// more multiply-add, 10% slower); on vectors that fill a register of a target
// with a permute of their width (AVX-512 and 16 lanes, AVX2 and 8) a cubic
// over sixteenths or eighths of an octave, whose powers of two sit in one
// register (vpermps), two multiply-adds fewer again (softmax 1536x128 3-4%
// faster on Zen 4 with AVX-512).
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace loom::codegen {

// The target's vector extensions the forms use.
struct VectorIsa {
  bool avx2 = false;
  bool avx512 = false;
};

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa);
llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa);
llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, VectorIsa isa);

}  // namespace loom::codegen
