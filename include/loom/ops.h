// Typed builders for the operator library. Sizes that are Exprs may be
// symbolic Vars (dynamic shapes); convolution-like operators take integers
// because their output extents are validated when built.
//
// Layout conventions:
//   matmul:        A[M,K] x B[K,N] -> C[M,N]
//   batch_matmul:  A[B,M,K] x B[B,K,N] -> C[B,M,N]
//   dense:         X[M,K], W[N,K], bias[N] -> Y[M,N] = X W^T (+ bias, act)
//   conv2d NHWC:   X[N,H,W,CI], W[KH,KW,CI/g,CO] -> Y[N,OH,OW,CO]
//   conv2d NCHW:   X[N,CI,H,W], W[CO,CI/g,KH,KW] -> Y[N,CO,OH,OW]
//   depthwise:     NHWC W[KH,KW,C]; NCHW W[C,KH,KW]
//   conv2d_transpose (NHWC): X[N,H,W,CI], W[KH,KW,CI,CO] -> Y[N,OH,OW,CO],
//                  OH = (H-1)*stride - 2*pad + KH
//   conv2d epilogue bn_relu: Y = relu(conv * scale[CO] + shift[CO]) (batch
//                  norm folded into a per-channel scale and shift)
//   pool2d (NHWC): max, or avg counting padded elements (PyTorch default)
//   softmax/layernorm/reduce: over the last axis of X[M,N]
#pragma once

#include <cstdint>
#include <string>

#include "loom/operator.h"

namespace loom::ops {

enum class Epilogue { None, Bias, BiasRelu, BiasGelu, BnRelu };
enum class Layout { NHWC, NCHW };
enum class PoolKind { Max, Avg };
enum class ReduceKind { Sum, Max, L2 };

Operator matmul(Expr M, Expr N, Expr K);
Operator batch_matmul(Expr B, Expr M, Expr N, Expr K);
Operator dense(Expr M, Expr N, Expr K, Epilogue epilogue = Epilogue::None);

struct Conv2dParams {
  int64_t N = 1, H = 1, W = 1, CI = 1, CO = 1, KH = 1, KW = 1;
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;
  Layout layout = Layout::NHWC;
  Epilogue epilogue = Epilogue::None;  // None or BnRelu
};
Operator conv2d(const Conv2dParams& p);
// CO is ignored: depthwise output channels equal C = CI.
Operator depthwise_conv2d(const Conv2dParams& p);
// dilation, groups and layout must be 1, 1 and NHWC.
Operator conv2d_transpose(const Conv2dParams& p);
// CI is the channel count; CO, dilation and groups are ignored.
Operator pool2d(const Conv2dParams& p, PoolKind kind);

Operator softmax(Expr M, Expr N);
Operator layernorm(Expr M, Expr N);
Operator reduce(Expr M, Expr N, ReduceKind kind);
Operator gelu(Expr M, Expr N);
Operator bias_add_relu(Expr M, Expr N);
Operator bias_add_gelu(Expr M, Expr N);
// Y[n,h,w,c] = relu(X[n,h,w,c] * scale[c] + shift[c]), NHWC.
Operator channel_affine_relu(Expr N, Expr H, Expr W, Expr C);

}  // namespace loom::ops
