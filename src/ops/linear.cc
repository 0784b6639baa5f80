// Matrix products: matmul, batch_matmul and dense with fused epilogues.
#include "ir/expr_nodes.h"
#include "loom/ops.h"
#include "ops/op_builder.h"

namespace loom::ops {

using te::compute;
using te::placeholder;
using te::reduce_axis;

Operator matmul(Expr M, Expr N, Expr K) {
  auto A = placeholder({M, K}, "A");
  auto B = placeholder({K, N}, "B");
  auto k = reduce_axis(K, "k");
  auto C = compute({M, N}, [&](const std::vector<Var>& ax) {
    return te::sum(A(ax[0], k.var) * B(k.var, ax[1]), {k});
  }, "C");
  return finish_operator("matmul", {A, B}, {C}, 2 * M * N * K);
}

Operator batch_matmul(Expr Bt, Expr M, Expr N, Expr K) {
  auto A = placeholder({Bt, M, K}, "A");
  auto B = placeholder({Bt, K, N}, "B");
  auto k = reduce_axis(K, "k");
  auto C = compute({Bt, M, N}, [&](const std::vector<Var>& ax) {
    return te::sum(A(ax[0], ax[1], k.var) * B(ax[0], k.var, ax[2]), {k});
  }, "C");
  return finish_operator("batch_matmul", {A, B}, {C}, 2 * Bt * M * N * K);
}

Expr gelu_of(const Expr& x) { return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f)); }

Operator dense(Expr M, Expr N, Expr K, Epilogue epilogue) {
  LOOM_USER_CHECK(epilogue != Epilogue::BnRelu,
                  "dense: epilogue BnRelu is for conv2d; dense takes None, Bias, BiasRelu or BiasGelu");
  auto X = placeholder({M, K}, "X");
  auto W = placeholder({N, K}, "W");
  auto k = reduce_axis(K, "k");
  auto product = compute({M, N}, [&](const std::vector<Var>& ax) {
    return te::sum(X(ax[0], k.var) * W(ax[1], k.var), {k});
  }, epilogue == Epilogue::None ? "Y" : "XW");
  Expr flops = 2 * M * N * K;
  if (epilogue == Epilogue::None) return finish_operator("dense", {X, W}, {product}, flops);

  auto bias = placeholder({N}, "bias");
  auto Y = compute({M, N}, [&](const std::vector<Var>& ax) {
    Expr v = product(ax[0], ax[1]) + bias(ax[1]);
    if (epilogue == Epilogue::BiasRelu) return max(v, 0.0f);
    if (epilogue == Epilogue::BiasGelu) return gelu_of(v);
    return v;
  }, "Y");
  return finish_operator("dense", {X, W, bias}, {Y}, flops + M * N);
}

Operator gelu(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto Y = compute({M, N}, [&](const std::vector<Var>& ax) { return gelu_of(X(ax[0], ax[1])); }, "Y");
  return finish_operator("gelu", {X}, {Y}, 5 * M * N);
}

Operator bias_add_gelu(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto b = placeholder({N}, "bias");
  auto Y = compute({M, N}, [&](const std::vector<Var>& ax) { return gelu_of(X(ax[0], ax[1]) + b(ax[1])); }, "Y");
  return finish_operator("bias_add_gelu", {X, b}, {Y}, 6 * M * N);
}

Operator channel_affine_relu(Expr N, Expr H, Expr W, Expr C) {
  auto X = placeholder({N, H, W, C}, "X");
  auto scale = placeholder({C}, "scale");
  auto shift = placeholder({C}, "shift");
  auto Y = compute({N, H, W, C}, [&](const std::vector<Var>& a) {
    return max(X(a[0], a[1], a[2], a[3]) * scale(a[3]) + shift(a[3]), 0.0f);
  }, "Y");
  return finish_operator("channel_affine_relu", {X, scale, shift}, {Y}, 3 * N * H * W * C);
}

Operator bias_add_relu(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto b = placeholder({N}, "bias");
  auto Y = compute({M, N}, [&](const std::vector<Var>& ax) {
    return max(X(ax[0], ax[1]) + b(ax[1]), 0.0f);
  }, "Y");
  return finish_operator("bias_add_relu", {X, b}, {Y}, 2 * M * N);
}

}  // namespace loom::ops
