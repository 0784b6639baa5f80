// Tensor-expression IR: construction, folding, printing and analyses.
#include "ir/size_binding.h"
#include "ir/analysis.h"
#include "ir/expr_nodes.h"
#include "test_util.h"

namespace loom {
namespace {

TEST(Expr, FoldsIntegerArithmetic) {
  EXPECT_EQ((Expr(3) + 4).as_const_int(), 7);
  EXPECT_EQ((Expr(-7) / 2).as_const_int(), -4);  // floor division
  EXPECT_EQ((Expr(-7) % 2).as_const_int(), 1);    // floor modulo
  Var x("x");
  EXPECT_EQ((x * 1).get(), x.get());
  EXPECT_EQ((x + 0).get(), x.get());
  EXPECT_EQ((x * 0).as_const_int(), 0);
}

TEST(Expr, OverflowInSizesIsAUserError) {
  EXPECT_USER_ERROR(Expr(int64_t(1) << 62) * 8, "integer overflow");
  EXPECT_USER_ERROR(Expr(1) / 0, "division by zero");
}

TEST(Expr, ImmediatesTakeTheOtherOperandsType) {
  te::Tensor A = te::placeholder({4}, "A");
  Expr e = A(0) * 2;
  EXPECT_EQ(e.dtype(), DType::f32());
  EXPECT_EQ(e.str(), "(A[0] * 2f)");
}

TEST(Expr, MismatchedTypesAreRejected) {
  te::Tensor A = te::placeholder({4}, "A");
  Var i("i");
  EXPECT_USER_ERROR(A(0) + i, "different types");
  EXPECT_USER_ERROR(exp(i), "needs a float operand");
  EXPECT_USER_ERROR(select(A(0), A(1), A(2)), "condition");
}

TEST(Expr, PrintsReadably) {
  Var i("i"), j("j");
  te::Tensor A = te::placeholder({8, 8}, "A");
  EXPECT_EQ(max(A(i, j), 0.0f).str(), "max(A[i, j], 0f)");
  EXPECT_EQ(select(i < 3, exp(A(i, j)), 1.5f).str(), "select((i < 3), exp(A[i, j]), 1.5f)");
}

TEST(TensorExpr, ComputeRecordsShapeAxesAndBody) {
  Var M("M");
  te::Tensor A = te::placeholder({M, 16}, "A");
  auto k = te::reduce_axis(16, "k");
  te::Tensor S = te::compute({M}, [&](const std::vector<Var>& ax) { return te::sum(A(ax[0], k.var), {k}); }, "S");
  EXPECT_EQ(S.ndim(), 1);
  EXPECT_EQ(S.shape()[0].get(), M.get());
  EXPECT_FALSE(S.is_placeholder());
  EXPECT_EQ(S.get()->body.str(), "sum(A[i, k], over k < 16)");
}

TEST(TensorExpr, RejectsBadDefinitions) {
  te::Tensor A = te::placeholder({4, 4}, "A");
  EXPECT_USER_ERROR(A(1), "has 2 dimensions but was indexed with 1");
  EXPECT_USER_ERROR(te::placeholder({4, 0}, "Z"), "must be positive, got 0");
  auto k = te::reduce_axis(4, "k");
  EXPECT_USER_ERROR(te::compute({4}, [&](const std::vector<Var>& ax) { return te::sum(A(ax[0], k.var), {k}) * 2.0f; }, "bad"),
                    "reduction must be the whole body");
  EXPECT_USER_ERROR(te::reduce_axis(0, "r"), "positive extent");
}

TEST(Analysis, LinearCoefficient) {
  Var i("i"), j("j"), n("n");
  EXPECT_EQ(linear_coeff(i * 16 + j, j.get()), 1);
  EXPECT_EQ(linear_coeff(i * 16 + j, i.get()), 16);
  EXPECT_EQ(linear_coeff((i + 2) * 3 - i, i.get()), 2);
  EXPECT_EQ(linear_coeff(i * n + j, j.get()), 1);
  EXPECT_EQ(linear_coeff(i * n, i.get()), std::nullopt);  // symbolic coefficient
  EXPECT_EQ(linear_coeff(i / 2, i.get()), std::nullopt);
  EXPECT_EQ(linear_coeff(n * 4, i.get()), 0);
  // Found by fuzz_operator: the strides of a huge tensor overflowed.
  const int64_t big = int64_t(1) << 40;
  EXPECT_EQ(linear_coeff((i * big) * big, i.get()), std::nullopt);
  EXPECT_EQ(linear_coeff(i * big + i * (INT64_MAX - 3), i.get()), std::nullopt);
}

TEST(Analysis, SubstituteAndUses) {
  Var i("i"), j("j");
  Expr e = i * 4 + j;
  Expr s = substitute(e, {{i.get(), Expr(2)}});
  EXPECT_EQ(s.str(), "(8 + j)");
  EXPECT_TRUE(uses_var(e, j.get()));
  EXPECT_FALSE(uses_var(s, i.get()));
}

TEST(Analysis, ExpensiveMath) {
  te::Tensor A = te::placeholder({4}, "A");
  EXPECT_TRUE(has_expensive_math(exp(A(0)) + 1.0f));
  EXPECT_FALSE(has_expensive_math(max(A(0), 0.0f)));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(SizeSubstitution, WithSizesMakesEveryShapeAndTheFlopsConstant) {
  Operator op = make_operator("dense", {{"N", "12"}, {"K", "5"}, {"epilogue", "bias"}}, {"M"});
  ASSERT_EQ(op.size_vars.size(), 1u);
  EXPECT_EQ(op.params.at("M"), "?");
  Operator fixed = with_sizes(op, {7});
  EXPECT_TRUE(fixed.size_vars.empty());
  EXPECT_EQ(fixed.params.at("M"), "7");
  EXPECT_EQ(fixed.flops.as_const_int(), make_operator("dense", {{"M", "7"}, {"N", "12"}, {"K", "5"},
                                                                {"epilogue", "bias"}}).flops.as_const_int());
  for (const auto& t : fixed.outputs)
    for (const Expr& d : t.shape()) EXPECT_TRUE(d.as_const_int().has_value()) << t.name();
  EXPECT_EQ(structure_text(fixed),
            structure_text(make_operator("dense", {{"M", "7"}, {"N", "12"}, {"K", "5"}, {"epilogue", "bias"}})));
  EXPECT_NE(structure_text(with_sizes(op, {8})), structure_text(fixed));
  EXPECT_NE(structure_text(op), structure_text(fixed));
  EXPECT_THROW(with_sizes(op, {0}), UserError);
  EXPECT_THROW(with_sizes(op, {1, 2}), UserError);
}

TEST(SizeSubstitution, StructureTextTellsOperatorsApart) {
  EXPECT_EQ(structure_text(ops::softmax(4, 9)), structure_text(ops::softmax(4, 9)));
  EXPECT_NE(structure_text(ops::softmax(4, 9)), structure_text(ops::layernorm(4, 9)));
  EXPECT_NE(structure_text(ops::reduce(4, 9, ops::ReduceKind::Sum)),
            structure_text(ops::reduce(4, 9, ops::ReduceKind::Max)));
}

}  // namespace
}  // namespace loom
