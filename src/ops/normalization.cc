// Row-wise operators over the last axis: softmax, layernorm, reductions.
#include "ir/expr_nodes.h"
#include "loom/ops.h"
#include "ops/op_builder.h"

namespace loom::ops {

using te::compute;
using te::placeholder;
using te::reduce_axis;

Operator softmax(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto k = reduce_axis(N, "k");
  auto k2 = reduce_axis(N, "k2");
  auto row_max = compute({M}, [&](const std::vector<Var>& a) { return te::max(X(a[0], k.var), {k}); }, "row_max");
  auto e = compute({M, N}, [&](const std::vector<Var>& a) { return exp(X(a[0], a[1]) - row_max(a[0])); }, "exp");
  auto row_sum = compute({M}, [&](const std::vector<Var>& a) { return te::sum(e(a[0], k2.var), {k2}); }, "row_sum");
  auto Y = compute({M, N}, [&](const std::vector<Var>& a) { return e(a[0], a[1]) / row_sum(a[0]); }, "Y");
  return finish_operator("softmax", {X}, {Y}, 5 * M * N);
}

Operator layernorm(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto gamma = placeholder({N}, "gamma");
  auto beta = placeholder({N}, "beta");
  auto k = reduce_axis(N, "k");
  auto k2 = reduce_axis(N, "k2");
  Expr n = cast(DType::f32(), N);
  auto row_sum = compute({M}, [&](const std::vector<Var>& a) { return te::sum(X(a[0], k.var), {k}); }, "row_sum");
  auto mean = compute({M}, [&](const std::vector<Var>& a) { return row_sum(a[0]) / n; }, "mean");
  auto sq = compute({M}, [&](const std::vector<Var>& a) {
    Expr d = X(a[0], k2.var) - mean(a[0]);
    return te::sum(d * d, {k2});
  }, "sq_sum");
  auto rstd = compute({M}, [&](const std::vector<Var>& a) { return rsqrt(sq(a[0]) / n + 1e-5f); }, "rstd");
  auto Y = compute({M, N}, [&](const std::vector<Var>& a) {
    return (X(a[0], a[1]) - mean(a[0])) * rstd(a[0]) * gamma(a[1]) + beta(a[1]);
  }, "Y");
  return finish_operator("layernorm", {X, gamma, beta}, {Y}, 8 * M * N);
}

Operator reduce(Expr M, Expr N, ReduceKind kind) {
  auto X = placeholder({M, N}, "X");
  auto k = reduce_axis(N, "k");
  if (kind == ReduceKind::L2) {
    auto sq = compute({M}, [&](const std::vector<Var>& a) {
      Expr x = X(a[0], k.var);
      return te::sum(x * x, {k});
    }, "sq_sum");
    auto Y = compute({M}, [&](const std::vector<Var>& a) { return sqrt(sq(a[0])); }, "Y");
    return finish_operator("reduce", {X}, {Y}, 2 * M * N);
  }
  auto Y = compute({M}, [&](const std::vector<Var>& a) {
    return kind == ReduceKind::Sum ? te::sum(X(a[0], k.var), {k}) : te::max(X(a[0], k.var), {k});
  }, "Y");
  return finish_operator("reduce", {X}, {Y}, M * N);
}

}  // namespace loom::ops
