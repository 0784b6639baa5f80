// Vendor-library baselines for the benchmarks: the same computation as a
// loom operator, run by oneDNN (or OpenBLAS) on its own buffers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "loom/hwspec.h"
#include "loom/ops.h"

namespace bench {

struct Baseline {
  std::string name;             // "oneDNN", "OpenBLAS"
  std::function<void()> run;    // one execution
  std::shared_ptr<void> state;  // keeps buffers and primitives alive
  // The implementation a oneDNN primitive chose (e.g. "jit:avx512_core",
  // "ref:any"); empty for plain library calls.
  std::string implementation = {};
  // oneDNN's reference implementations are plain loops, kept for
  // correctness, not speed: no fair measure of what a library achieves.
  bool is_reference() const { return implementation.rfind("ref", 0) == 0; }
};

// Thread count for both libraries; call before any other function here.
void set_library_threads(int threads);
// Keeps oneDNN to the instruction set kernels built for `spec` use: AVX2
// where the spec has no AVX-512 (on an AVX-512 machine, for a comparison on
// the same core and register file). Before any oneDNN call.
void limit_onednn_isa(const loom::HwSpec& spec);

Baseline onednn_gemm(int64_t M, int64_t N, int64_t K, bool transpose_b);
Baseline openblas_gemm(int64_t M, int64_t N, int64_t K, bool transpose_b);
// loom's dense, Y = X W^T with its epilogue (bias, then ReLU or GELU), as an
// inner product with bias and an eltwise post-op, weights in the layout
// oneDNN prefers (reordered once, outside timing).
Baseline onednn_dense(int64_t M, int64_t N, int64_t K, loom::ops::Epilogue epilogue);
// NHWC activations, or the layout oneDNN prefers (blocked, e.g. nChw16c)
// when `preferred_layout`; groups == CI == CO for depthwise.
Baseline onednn_conv(const loom::ops::Conv2dParams& p, bool bn_relu, bool preferred_layout = false);
// sqrt(sum of squares) over the last axis of [M, N].
Baseline onednn_l2_norm(int64_t M, int64_t N);
// The same with OpenBLAS's snrm2, row by row.
Baseline openblas_l2_norm(int64_t M, int64_t N);
// Softmax over the last axis of [M, N].
Baseline onednn_softmax(int64_t M, int64_t N);
// Layer normalization over the last axis of [M, N] with scale and shift.
Baseline onednn_layernorm(int64_t M, int64_t N);

}  // namespace bench
